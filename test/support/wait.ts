/** Waiting for a condition in tests and benchmarks: poll, never sleep a fixed time; fail naming the condition. */

/** Poll `cond` until it holds; returns the milliseconds it took. */
export async function until(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 60_000, pollMs = 20): Promise<number> {
  const started = Date.now();
  while (!(await cond())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
  return Date.now() - started;
}

/** Poll `probe` until it returns a value, and return it. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000, pollMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
