/**
 * kafkajs errors, classified here and nowhere else: the applications ask
 * whether a failure is the broker being unreachable (an outage to ride out),
 * a retriable protocol error, a refusal for good (refused SASL credentials
 * among them), or the group rebalancing.
 */

/** kafkajs's retriable flag (its protocol errors carry one); undefined when the error has none. */
function retriableFlag(error: unknown): boolean | undefined {
  const flag = (error as { retriable?: unknown } | null | undefined)?.retriable;
  return typeof flag === "boolean" ? flag : undefined;
}

/** The innermost cause: kafkajs wraps connection errors in "retries exceeded" errors. */
function innermost(error: unknown): unknown {
  let e: unknown = error;
  for (;;) {
    const inner = (e as { originalError?: unknown; cause?: unknown } | undefined)?.originalError ?? (e as { cause?: unknown } | undefined)?.cause;
    if (!(inner instanceof Error)) return e;
    e = inner;
  }
}

/**
 * A broker that cannot be reached (refused, reset, timed out, no leader while
 * it restarts). Judged on the innermost cause: a Redis error that kafkajs
 * retried (inside a batch handler) is wrapped the same way and is not a Kafka outage.
 */
export function isBrokerUnreachable(error: unknown): boolean {
  const e = innermost(error);
  if (!(e instanceof Error) || /redis|ReplyError|MaxRetriesPerRequest/i.test(e.name) || (e as { command?: unknown }).command !== undefined) return false;
  // A retriable kafkajs error at the bottom (no leader, not coordinator, broker not found) is a broker restarting.
  if (/^KafkaJS/.test(e.name) && retriableFlag(e) === true) return true;
  // kafkajs asks each broker for the group coordinator, drops each one's error (a refused connection too) and
  // throws this final, "non-retriable" error when none answered: during an outage, every broker refusing.
  if (e.name === "KafkaJSGroupCoordinatorNotFound") return true;
  return /KafkaJSConnection|Connection (error|timeout|closed)|ECONNREFUSED|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|Broker not connected|Closed connection/i.test(`${e.name} ${e.message}`);
}

/**
 * Kafka refused the SASL credentials (kafkajs's KafkaJSSASLAuthenticationError,
 * however deep kafkajs wrapped it): a refusal for good, like a refused Redis password.
 */
export function isSaslAuthFailure(error: unknown): boolean {
  let e = error;
  // Bounded: a cause chain is short, and a cyclic one must not loop.
  for (let depth = 0; e instanceof Error && depth < 16; depth++) {
    if (e.name === "KafkaJSSASLAuthenticationError") return true;
    e = (e as { originalError?: unknown }).originalError ?? e.cause;
  }
  return false;
}

/** What went wrong at the bottom, as one line: the innermost error's message (kafkajs's outer ones repeat it). */
export function kafkaFailureText(error: unknown): string {
  const e = innermost(error);
  return (e instanceof Error ? e.message : String(e)).replace(/\s*\n\s*/g, " ").trim();
}

/** kafkajs says retrying may help. */
export function isRetriableKafkaError(error: unknown): boolean {
  return retriableFlag(error) === true;
}

/** A refusal for good (record too large, not authorized): not an outage, retrying cannot help. */
export function isPermanentKafkaError(error: unknown): boolean {
  return retriableFlag(error) === false && !isBrokerUnreachable(error);
}

const REBALANCE_TYPES = new Set(["REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID"]);

/** The group is rebalancing or this member was expelled: kafkajs's runner must see the error to rejoin. */
export function isRebalance(error: unknown): boolean {
  const type = (error as { type?: unknown } | null | undefined)?.type;
  return (typeof type === "string" && REBALANCE_TYPES.has(type)) || /rebalanc/i.test(String((error as Error | undefined)?.message ?? error));
}
