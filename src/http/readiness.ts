/**
 * Readiness checks registered by the embedding process ("redis", "kafka",
 * "group", …). A check passes when its promise resolves to anything but
 * `false` within the timeout; it fails when it rejects, resolves `false` or
 * times out.
 */
export type ReadinessCheck = () => Promise<unknown>;

export interface CheckResult {
  name: string;
  ok: boolean;
  /** Why it failed (the error message, "returned false" or "timed out after N ms"): for the log, never for HTTP clients. */
  detail?: string;
  ms: number;
}

export class Readiness {
  private readonly checks = new Map<string, ReadinessCheck>();

  constructor(
    checks: Record<string, ReadinessCheck> = {},
    readonly timeoutMs = 2_000,
  ) {
    for (const [name, check] of Object.entries(checks)) this.register(name, check);
  }

  /** Add (or replace) a named check. */
  register(name: string, check: ReadinessCheck): this {
    this.checks.set(name, check);
    return this;
  }

  unregister(name: string): boolean {
    return this.checks.delete(name);
  }

  get names(): string[] {
    return [...this.checks.keys()];
  }

  /** Run every check concurrently, each bounded by the timeout; results in registration order. */
  async run(): Promise<{ ready: boolean; results: CheckResult[] }> {
    const results = await Promise.all([...this.checks].map(([name, check]) => this.runOne(name, check)));
    return { ready: results.every((r) => r.ok), results };
  }

  private async runOne(name: string, check: ReadinessCheck): Promise<CheckResult> {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      const value = await Promise.race([Promise.resolve().then(check), timeout]);
      const ms = Math.round(performance.now() - started);
      return value === false ? { name, ok: false, detail: "returned false", ms } : { name, ok: true, ms };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      return { name, ok: false, detail: message.slice(0, 300), ms: Math.round(performance.now() - started) };
    } finally {
      clearTimeout(timer);
    }
  }
}
