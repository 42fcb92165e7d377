/**
 * One Kafka admin client kept connected for a process's rare questions to the
 * brokers (a join's committed offsets, a partition's log offsets). Connecting
 * a client per question cost ~120 ms, and a join's first batches waited for
 * it. A question that fails drops the client and is asked once more of a
 * newly connected one: the kept one's connections may have died with a
 * broker outage.
 */
import type { Admin } from "kafkajs";

export class KeptAdmin {
  private client: Promise<Admin> | undefined;

  constructor(private readonly create: () => Admin) {}

  /** The kept client, connected (the first call connects it). */
  connected(): Promise<Admin> {
    if (this.client === undefined) {
      const admin = this.create();
      const connected = admin.connect().then(() => admin);
      this.client = connected;
      connected.catch(() => {
        if (this.client === connected) this.client = undefined;
      });
    }
    return this.client;
  }

  /** `ask` the kept client; on a failure, once more of a new one, whose failure is thrown. */
  async ask<T>(ask: (admin: Admin) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const pending = this.connected();
      let admin: Admin | undefined;
      try {
        admin = await pending;
        return await ask(admin);
      } catch (error) {
        await this.drop(pending, admin);
        if (attempt === 2) throw error;
      }
    }
  }

  /** Disconnect the kept client (the next question connects a new one). */
  async close(): Promise<void> {
    const pending = this.client;
    this.client = undefined;
    await pending?.then((admin) => admin.disconnect()).catch(() => undefined);
  }

  private async drop(pending: Promise<Admin>, admin: Admin | undefined): Promise<void> {
    if (this.client === pending) this.client = undefined;
    await admin?.disconnect().catch(() => undefined);
  }
}
