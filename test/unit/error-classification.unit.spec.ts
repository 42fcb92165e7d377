// Errors are classified by type in the adapters, once: Redis error replies by their
// protocol error code, kafkajs errors by their class and retriable flag.
import kafkajs from "kafkajs";
import { ReplyError } from "ioredis";
import { describe, expect, it } from "vitest";
import { FunctionsMissingError, KeyLayoutError, MufoldError, RedisPermissionError, classifyRedisError } from "../../src/adapters/redis/errors.js";
import { isBrokerUnreachable, isPermanentKafkaError, isRebalance, isRetriableKafkaError } from "../../src/adapters/kafka/errors.js";

const { KafkaJSConnectionError, KafkaJSGroupCoordinatorNotFound, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError, KafkaJSNonRetriableError } = kafkajs;
const reply = (message: string) => new ReplyError(message);
// kafkajs builds protocol errors from the broker's error code entry ({message, type, code, retriable}); its typings say Error.
const protocolError = (entry: { message: string; type: string; code: number; retriable: boolean }) => new KafkaJSProtocolError(entry as unknown as Error);

describe("classifyRedisError", () => {
  it("NOPERM is a permission error that is never retried, keeping the reply text", () => {
    const e = classifyRedisError(reply("NOPERM User fold has no permissions to run the 'info' command"));
    expect(e).toBeInstanceOf(RedisPermissionError);
    expect((e as MufoldError).retriable).toBe(false);
    expect((e as Error).message).toBe("NOPERM User fold has no permissions to run the 'info' command");
  });

  it("CROSSSLOT is a key-layout bug, never retried", () => {
    const e = classifyRedisError(reply("CROSSSLOT Keys in request don't hash to the same slot"));
    expect(e).toBeInstanceOf(KeyLayoutError);
    expect((e as MufoldError).retriable).toBe(false);
  });

  it("a missing function says which one and what to run; it is ridden out like an outage", () => {
    const e = classifyRedisError(reply("ERR Function not found"), "mufold_apply_v1");
    expect(e).toBeInstanceOf(FunctionsMissingError);
    expect((e as MufoldError).retriable).toBe(true);
    expect((e as Error).message).toMatch(/^Redis has no function mufold_apply_v1: run `mufold setup`/);
  });

  it("other errors pass unchanged: another ERR, a connection loss, a non-error", () => {
    const other = reply("ERR wrong number of arguments for 'hset' command");
    const lost = new Error("Connection is closed.");
    expect(classifyRedisError(other)).toBe(other);
    expect(classifyRedisError(lost)).toBe(lost);
    expect(classifyRedisError("text")).toBe("text");
    // The code is the reply's first word: the text elsewhere does not count.
    const mention = reply("ERR user script mentions NOPERM and CROSSSLOT");
    expect(classifyRedisError(mention)).toBe(mention);
  });
});

describe("kafkajs errors", () => {
  const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9092"), { code: "ECONNREFUSED" });

  it("a refused connection wrapped in retries-exceeded is the broker unreachable", () => {
    const conn = new KafkaJSConnectionError("Connection error: connect ECONNREFUSED 127.0.0.1:9092", { broker: "127.0.0.1:9092" });
    const wrapped = new KafkaJSNumberOfRetriesExceeded(conn, { retryCount: 5, retryTime: 1000 });
    expect(isBrokerUnreachable(wrapped)).toBe(true);
    expect(isBrokerUnreachable(refused)).toBe(true);
    expect(isPermanentKafkaError(wrapped)).toBe(false);
  });

  it("a Redis error that kafkajs retried inside a batch is not a Kafka outage", () => {
    const redisDown = Object.assign(reply("ERR something"), { command: { name: "fcall" } });
    expect(isBrokerUnreachable(new KafkaJSNumberOfRetriesExceeded(redisDown, { retryCount: 5, retryTime: 1000 }))).toBe(false);
    const maxRetries = new Error("Reached the max retries per request limit (which is 1).");
    maxRetries.name = "MaxRetriesPerRequestError";
    expect(isBrokerUnreachable(maxRetries)).toBe(false);
  });

  it("a retriable protocol error (no leader while the broker restarts) is retriable and counts as unreachable", () => {
    const noLeader = protocolError({ message: "There is no leader for this topic-partition", type: "LEADER_NOT_AVAILABLE", code: 5, retriable: true });
    expect(isRetriableKafkaError(noLeader)).toBe(true);
    expect(isBrokerUnreachable(noLeader)).toBe(true);
  });

  it("a group coordinator found on no broker is an outage, though kafkajs marks it non-retriable", () => {
    // kafkajs throws it when every broker's coordinator lookup failed, each broker's error dropped.
    // (kafkajs's typings declare no constructor arguments; kafkajs passes the message.)
    const lost = new (KafkaJSGroupCoordinatorNotFound as unknown as new (message: string) => Error)("Failed to find group coordinator");
    expect(isRetriableKafkaError(lost)).toBe(false);
    expect(isBrokerUnreachable(lost)).toBe(true);
    expect(isPermanentKafkaError(lost)).toBe(false);
  });

  it("a refusal for good is permanent: record too large, not authorized", () => {
    const tooLarge = protocolError({ message: "The request included a message larger than the max message size the server will accept", type: "MESSAGE_TOO_LARGE", code: 10, retriable: false });
    const denied = new KafkaJSNonRetriableError("Not authorized to access topics: [t]");
    expect(isPermanentKafkaError(tooLarge)).toBe(true);
    expect(isPermanentKafkaError(denied)).toBe(true);
    expect(isRetriableKafkaError(tooLarge)).toBe(false);
  });

  it("rebalances are recognized by the protocol error type", () => {
    for (const type of ["REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID"]) {
      expect(isRebalance(protocolError({ message: "x", type, code: 27, retriable: false }))).toBe(true);
    }
    expect(isRebalance(protocolError({ message: "x", type: "NOT_COORDINATOR", code: 16, retriable: true }))).toBe(false);
    expect(isRebalance(refused)).toBe(false);
  });
});
