/**
 * The kafkajs request-queue patch (src/adapters/kafka/timeout-patch.ts), on
 * kafkajs's own RequestQueue with no socket: a response that leaves nothing
 * queued arms no timer (kafkajs 2.2.4 arms one with a negative delay, which
 * polls every millisecond and which Node 24 reports as a
 * TimeoutNegativeWarning), while queued requests still go out after an
 * in-flight slot frees or a throttle ends. scripts/test.sh also runs this tier
 * on Node 22 and 24, where the warning itself is watched for.
 */
import { createRequire } from "node:module";
import { afterEach, describe, expect, it, vi } from "vitest";
import "../../src/adapters/kafka/timeout-patch.js";

interface Entry {
  correlationId: number;
  apiKey: number;
  apiName: string;
  apiVersion: number;
  resolve(response: unknown): void;
  reject(error: unknown): void;
}
interface Queue {
  pending: unknown[];
  throttleCheckTimeoutId: unknown;
  push(request: { entry: Entry; expectResponse: boolean; sendRequest(): void }): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
  maybeThrottle(ms: number): void;
  destroy(): void;
}
type QueueClass = new (options: Record<string, unknown>) => Queue;

const RequestQueue = createRequire(import.meta.url)("kafkajs/src/network/requestQueue/index.js") as QueueClass;
const silent = { debug() {}, info() {}, warn() {}, error() {} };

const queues: Queue[] = [];
function queue(maxInFlightRequests: number | null): Queue {
  const q = new RequestQueue({ maxInFlightRequests, requestTimeout: 30_000, enforceRequestTimeout: false, clientId: "t", broker: "b", logger: silent });
  queues.push(q);
  return q;
}

/** A request that records when it was sent and what it was answered with. */
function request(correlationId: number) {
  const state = { sent: false, answered: undefined as unknown };
  const entry: Entry = {
    correlationId,
    apiKey: 3,
    apiName: "Metadata",
    apiVersion: 0,
    resolve: (response) => (state.answered = response),
    reject: (error) => (state.answered = error),
  };
  return { state, pushed: { entry, expectResponse: true, sendRequest: () => (state.sent = true) } };
}

const answer = (correlationId: number) => ({ correlationId, payload: Buffer.from([correlationId]), size: 1 });

afterEach(() => {
  for (const q of queues.splice(0)) q.destroy();
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("kafkajs RequestQueue with the timer patch", () => {
  it("a response that leaves nothing queued arms no timer, so no negative delay and no TimeoutNegativeWarning", async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    const delays: number[] = [];
    const realSetTimeout = globalThis.setTimeout;
    vi.spyOn(globalThis, "setTimeout").mockImplementation(((fn: () => void, ms?: number) => {
      delays.push(ms ?? 0);
      return realSetTimeout(fn, ms);
    }) as typeof setTimeout);
    try {
      const q = queue(null);
      const { state, pushed } = request(1);
      q.push(pushed);
      expect(state.sent).toBe(true);
      q.fulfillRequest(answer(1));
      expect(state.answered).toMatchObject({ correlationId: 1, size: 1 });

      expect(q.throttleCheckTimeoutId).toBeNull();
      expect(delays).toEqual([]);
      // A warning is emitted on the next tick: let the ticks run before looking.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((w) => w.name)).not.toContain("TimeoutNegativeWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("a request queued behind the in-flight limit goes out when the one ahead is answered", () => {
    vi.useFakeTimers();
    const q = queue(1);
    const first = request(1);
    const second = request(2);
    q.push(first.pushed);
    q.push(second.pushed);
    expect([first.state.sent, second.state.sent]).toEqual([true, false]);
    expect(q.pending).toHaveLength(1);

    q.fulfillRequest(answer(1));
    expect(second.state.sent).toBe(true);
    expect(q.pending).toHaveLength(0);
    q.fulfillRequest(answer(2));
    expect(second.state.answered).toMatchObject({ correlationId: 2 });
    // The check kafkajs armed when it queued the second request fires once, finds
    // nothing and arms no other (unpatched, this loops until vitest gives up).
    vi.runAllTimers();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a request queued behind a throttle goes out when the throttle ends, and then no timer is left", () => {
    vi.useFakeTimers();
    const q = queue(null);
    q.maybeThrottle(300);
    const { state, pushed } = request(1);
    q.push(pushed);
    expect(state.sent).toBe(false);
    expect(vi.getTimerCount()).toBe(1);

    vi.advanceTimersByTime(299);
    expect(state.sent).toBe(false);
    vi.advanceTimersByTime(1);
    expect(state.sent).toBe(true);

    q.fulfillRequest(answer(1));
    expect(state.answered).toMatchObject({ correlationId: 1 });
    expect(vi.getTimerCount()).toBe(0);
  });
});
