/**
 * ProjectionReader.connect on a port that refuses the connection (nothing
 * listens there) fails at once with a typed, retriable MufoldError, however
 * long the connect timeout, and leaves nothing that keeps the process alive.
 * A reader that waited out the timeout would fail with a timeout, not with the
 * refusal as its cause; a child that kept running would be killed by the guard.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { RedisUnavailableError } from "../../src/adapters/redis/connect.js";
import { ProjectionReader } from "../../src/client/readback.js";
import { MufoldError } from "../../src/errors.js";
import { freePort } from "../support/free-port.js";

/** Far longer than the bound below: a reader that waited for the port to open would be caught. */
const LONG_CONNECT_TIMEOUT = { MUFOLD_CONNECT_TIMEOUT_MS: "60000" };
/** Far below the connect timeout: a child still alive then is killed (exit code null). */
const HANG_GUARD_MS = 20_000;
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

describe("ProjectionReader.connect on a refused port", () => {
  it("fails at once with a retriable MufoldError naming the endpoint, its cause the refusal", async () => {
    const port = await freePort();
    const err = await ProjectionReader.connect({ redisUrl: `redis://127.0.0.1:${port}`, env: LONG_CONNECT_TIMEOUT }).then(
      async (reader) => (await reader.close(), undefined),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MufoldError);
    expect(err).toBeInstanceOf(RedisUnavailableError);
    const failure = err as MufoldError;
    expect(failure.retriable).toBe(true);
    expect((failure.cause as NodeJS.ErrnoException).code).toBe("ECONNREFUSED");
    expect(failure.message).toBe(`Redis at redis://127.0.0.1:${port} refused the connection: connect ECONNREFUSED 127.0.0.1:${port}`);
  });

  it("leaves no timer behind: a process whose only work is the failed connect exits at once", async () => {
    const port = await freePort();
    const script = [
      `import { ProjectionReader } from "./src/client/readback.ts";`,
      `try { await ProjectionReader.connect({ redisUrl: "redis://127.0.0.1:${port}", env: ${JSON.stringify(LONG_CONNECT_TIMEOUT)} }); }`,
      `catch (e) { process.stdout.write(e.name); }`,
    ].join("\n");
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const guard = setTimeout(() => child.kill("SIGKILL"), HANG_GUARD_MS);
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    clearTimeout(guard);
    expect(out).toBe("RedisUnavailableError");
    expect(code).toBe(0); // not killed by the guard: nothing kept it alive for the 60 s timeout
  });

  it("still connects to a Redis that listens (the control)", async () => {
    const reader = await ProjectionReader.connect({ redisUrl: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", env: LONG_CONNECT_TIMEOUT });
    try {
      expect(await reader.redis.ping()).toBe("PONG");
    } finally {
      await reader.close();
    }
  });
});
