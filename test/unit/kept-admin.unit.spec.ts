/**
 * The fold worker's kept admin client (consumers/fold/kept-admin.ts): one
 * connection for many questions; a question that fails is asked once more of
 * a new client, and the failed one is disconnected. Admin clients here are
 * stand-ins that count their connects and disconnects.
 */
import type { Admin } from "kafkajs";
import { describe, expect, it } from "vitest";
import { KeptAdmin } from "../../consumers/fold/kept-admin.js";

interface FakeAdmin {
  id: number;
  connects: number;
  disconnects: number;
  admin: Admin;
}

function fakes(connectFails: (id: number) => boolean = () => false) {
  const made: FakeAdmin[] = [];
  const create = (): Admin => {
    const fake: FakeAdmin = { id: made.length + 1, connects: 0, disconnects: 0, admin: undefined as unknown as Admin };
    fake.admin = {
      connect: async () => {
        fake.connects++;
        if (connectFails(fake.id)) throw new Error(`admin ${fake.id} cannot connect`);
      },
      disconnect: async () => {
        fake.disconnects++;
      },
    } as unknown as Admin;
    made.push(fake);
    return fake.admin;
  };
  const idOf = (admin: Admin) => made.find((f) => f.admin === admin)!.id;
  return { made, create, idOf };
}

describe("a kept admin client", () => {
  it("connects once and answers every question on that one connection", async () => {
    const { made, create, idOf } = fakes();
    const kept = new KeptAdmin(create);
    const answers = await Promise.all([kept.ask(async (a) => idOf(a)), kept.ask(async (a) => idOf(a)), kept.connected().then(idOf)]);
    expect(answers).toEqual([1, 1, 1]);
    expect(made.map((f) => [f.connects, f.disconnects])).toEqual([[1, 0]]);
  });

  it("asks a failed question once more of a new client, and disconnects the old one", async () => {
    const { made, create, idOf } = fakes();
    const kept = new KeptAdmin(create);
    const asked: number[] = [];
    const answer = await kept.ask(async (a) => {
      asked.push(idOf(a));
      if (idOf(a) === 1) throw new Error("connection closed");
      return "offsets";
    });
    expect(answer).toBe("offsets");
    expect(asked).toEqual([1, 2]);
    expect(made.map((f) => [f.connects, f.disconnects])).toEqual([[1, 1], [1, 0]]);
    // The new client is the kept one now.
    expect(idOf(await kept.connected())).toBe(2);
  });

  it("throws the second failure, and the next question connects anew", async () => {
    const { made, create, idOf } = fakes();
    const kept = new KeptAdmin(create);
    await expect(kept.ask(async (a) => Promise.reject(new Error(`no answer from ${idOf(a)}`)))).rejects.toThrow("no answer from 2");
    expect(await kept.ask(async (a) => idOf(a))).toBe(3);
    expect(made.map((f) => f.disconnects)).toEqual([1, 1, 0]);
  });

  it("a client that cannot connect is not kept", async () => {
    const { made, create, idOf } = fakes((id) => id === 1);
    const kept = new KeptAdmin(create);
    await expect(kept.connected()).rejects.toThrow("admin 1 cannot connect");
    expect(idOf(await kept.connected())).toBe(2);
    expect(made).toHaveLength(2);
  });

  it("close disconnects the kept client; the next question connects a new one", async () => {
    const { made, create, idOf } = fakes();
    const kept = new KeptAdmin(create);
    await kept.connected();
    await kept.close();
    expect(made[0]!.disconnects).toBe(1);
    expect(await kept.ask(async (a) => idOf(a))).toBe(2);
  });
});
