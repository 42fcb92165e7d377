/**
 * kafkajs 2.2.4 (RequestQueue.scheduleCheckPendingRequests) arms a timer after
 * every response even when no request waits and no throttle is in force: its
 * delay is then `throttledUntil - Date.now()`, negative (throttledUntil starts
 * at -1), which Node turns into 1 ms. The timer finds nothing to send and arms
 * the next one, so every connection polls every millisecond until it closes
 * (kafkajs issue 1704), and Node 24 reports each such timer as a
 * TimeoutNegativeWarning (issue 1751). Both are open upstream, and kafkajs is
 * unmaintained.
 *
 * The patch arms the timer only when a request waits in the queue. A request
 * that cannot be sent at once is queued by `push`, which calls the scheduler
 * again, so a queue that was empty needs no timer. For a queue with requests
 * kafkajs's own code runs unchanged; its delay is then positive (the end of
 * the throttle or its 10 ms interval).
 *
 * Applied on import, once per process (the prototype is shared by every
 * client); client.ts imports this module, so every kafkajs client mufold
 * creates has it.
 */
import { createRequire } from "node:module";

/** What the patch reads of kafkajs's RequestQueue (2.2.4; not in its typings). */
interface RequestQueueInternals {
  pending: unknown[];
  scheduleCheckPendingRequests(): void;
}

const PATCHED = Symbol.for("mufold.kafkajs.requestQueueTimerPatch");

function armOnlyWithPendingRequests(): void {
  const RequestQueue = createRequire(import.meta.url)("kafkajs/src/network/requestQueue/index.js") as {
    prototype: RequestQueueInternals & { [PATCHED]?: true };
  };
  const proto = RequestQueue.prototype;
  if (proto[PATCHED]) return;
  const original = proto.scheduleCheckPendingRequests;
  if (typeof original !== "function") {
    throw new Error("kafkajs internals changed (network/requestQueue): review src/adapters/kafka/timeout-patch.ts");
  }
  proto.scheduleCheckPendingRequests = function (this: RequestQueueInternals): void {
    if (this.pending.length === 0) return;
    original.call(this);
  };
  proto[PATCHED] = true;
}

armOnlyWithPendingRequests();
