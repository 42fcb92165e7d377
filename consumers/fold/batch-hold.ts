/**
 * Holding a batch while something it needs is away (Redis, the broker, a
 * promote's pause): the poll interval, and the heartbeat that keeps the
 * member in its group meanwhile.
 */
import { isRebalance } from "../../src/adapters/kafka/errors.js";
import type { BatchContext } from "../../src/adapters/kafka/consumer.js";

/** How often a held batch looks again, and how long a seal vouches for the control hash. */
export const POLL_MS = 250;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Heartbeat while a batch is held (an outage, a pause). When the group is
 * rebalancing, give the batch up (uncommitted, it is redelivered) so this
 * member can rejoin instead of stalling the group; other heartbeat failures
 * (the broker itself is down) are the outage being ridden out.
 */
export async function heartbeatOrYield(ctx: BatchContext): Promise<void> {
  try {
    await ctx.heartbeat();
  } catch (error) {
    // Rebalancing, or this member was expelled: rethrow kafkajs's own error, so its runner rejoins at once.
    if (isRebalance(error)) throw error;
  }
}
