/**
 * A Redis server of one test's own (a free port, its own directory, AOF on),
 * so a test can stop it and start it again with its data without touching
 * the shared Redis other tests use.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { freePort } from "./free-port.js";

export class PrivateRedis {
  private process: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly extraArgs: string[],
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(extraArgs: string[] = []): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort(), mkdtempSync(join(tmpdir(), "mufold-redis-")), extraArgs);
    await redis.up();
    return redis;
  }

  /** Start (again) on the same port and directory: the AOF brings the data back. */
  async up(): Promise<void> {
    this.process = spawn("redis-server", ["--port", String(this.port), "--bind", "127.0.0.1", "--dir", this.dir, "--appendonly", "yes", "--appendfsync", "always", "--save", "", ...this.extraArgs], {
      stdio: "ignore",
    });
    const deadline = Date.now() + 15_000;
    for (;;) {
      const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on("error", () => undefined); // refused while the server starts: connect() rejects, this is its event
      try {
        await probe.connect();
        if ((await probe.ping()) === "PONG") return;
      } catch {
        /* not yet */
      } finally {
        probe.disconnect();
      }
      if (Date.now() > deadline) throw new Error(`private redis-server on ${this.port} did not start`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Stop the server (its AOF keeps the data); resolves when the process has exited. */
  async down(): Promise<void> {
    const child = this.process;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
    this.process = undefined;
  }

  /** Replace the server with a brand-new empty one on the same port: no keys, no function libraries. */
  async replaceWithEmpty(): Promise<void> {
    await this.down();
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.dir, { recursive: true });
    await this.up();
  }

  /**
   * A point-in-time backup: SAVE, then a copy of dump.rdb kept aside; returns the copy's path.
   * Start the server with `--appendonly no`, or a restart loads the AOF instead of the RDB.
   */
  async saveRdb(): Promise<string> {
    const client = new Redis(this.url, { maxRetriesPerRequest: 0 });
    try {
      await client.save();
    } finally {
      client.disconnect();
    }
    const copy = join(this.dir, `backup-${Date.now()}-${Math.random().toString(16).slice(2)}.rdb`); // removed with the server
    copyFileSync(join(this.dir, "dump.rdb"), copy);
    return copy;
  }

  /** Restore a backup from saveRdb: stop the server, put the RDB back, start it again (no save points: stopping saves nothing). */
  async restoreRdb(copy: string): Promise<void> {
    await this.down();
    copyFileSync(copy, join(this.dir, "dump.rdb"));
    await this.up();
  }

  async remove(): Promise<void> {
    await this.down();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
