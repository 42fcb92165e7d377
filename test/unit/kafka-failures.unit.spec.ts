/**
 * What a Kafka failure becomes for the applications and the CLI: refused SASL
 * credentials exit 2 wherever kafkajs raised them (as refused Redis ones do),
 * and a producer step past its retry budget is one retriable line naming the
 * brokers. The shared broker has no SASL listener, so the refusal is kafkajs's
 * own error class, built and wrapped the way kafkajs does
 * (saslAuthenticator, then its retrier's KafkaJSNonRetriableError).
 */
import kafkajs from "kafkajs";
import { describe, expect, it } from "vitest";
import { KafkaAuthError, KafkaUnavailableError } from "../../src/adapters/kafka/client.js";
import { isSaslAuthFailure } from "../../src/adapters/kafka/errors.js";
import { kafkaProducerFailure } from "../../src/adapters/kafka/producer.js";
import { exitCodeOf, fatalMessage } from "../../src/cli/fatal.js";
import { MufoldError } from "../../src/errors.js";

const { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } = kafkajs;
// kafkajs's typings leave out these constructors' arguments, which its runtime takes (kafkajs/src/errors.js).
const KafkaJSSASLAuthenticationError = kafkajs.KafkaJSSASLAuthenticationError as unknown as new (message: string) => Error;
const KafkaJSNonRetriableError = kafkajs.KafkaJSNonRetriableError as unknown as new (e: Error, options: { cause: unknown }) => Error;

const saslRefusal = () => new KafkaJSSASLAuthenticationError("SASL SCRAM SHA256 authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256");
/** kafkajs's retrier wraps a non-retriable error so: `new KafkaJSNonRetriableError(e, { cause: e.cause || e })`. */
const asRetrierThrows = (e: Error) => new KafkaJSNonRetriableError(e, { cause: e });
const refused = (port: number) => new KafkaJSConnectionError(`Connection error: connect ECONNREFUSED 127.0.0.1:${port}`, { broker: `127.0.0.1:${port}`, code: "ECONNREFUSED" });
const client = { brokers: ["k1:9092", "k2:9092"], retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 5000 } };

describe("refused Kafka credentials through the CLI's exit codes", () => {
  it("exit 2 for kafkajs's SASL error, bare or as its retrier wraps it", () => {
    expect(exitCodeOf(saslRefusal())).toBe(2);
    expect(exitCodeOf(asRetrierThrows(saslRefusal()))).toBe(2);
    expect(fatalMessage(asRetrierThrows(saslRefusal()))).toMatch(/^KafkaJSNonRetriableError: SASL SCRAM SHA256 authentication failed: [^\n]+$/);
  });

  it("other kafkajs failures keep exit 1: a refused connection past the retries, an authorization refusal", () => {
    expect(exitCodeOf(new KafkaJSNumberOfRetriesExceeded(refused(1), { retryCount: 8, retryTime: 5000 }))).toBe(1);
    const topicDenied = new KafkaJSProtocolError({ message: "Not authorized to access topics", type: "TOPIC_AUTHORIZATION_FAILED", code: 29, retriable: false } as unknown as Error);
    expect(exitCodeOf(topicDenied)).toBe(1);
    expect(isSaslAuthFailure(topicDenied)).toBe(false);
  });

  it("a cyclic cause chain is walked to an end", () => {
    const a = new Error("a") as Error & { cause?: unknown };
    const b = new Error("b", { cause: a });
    a.cause = b;
    expect(isSaslAuthFailure(a)).toBe(false);
    expect(exitCodeOf(a)).toBe(1);
  });
});

describe("kafkaProducerFailure", () => {
  it("refused credentials: a non-retriable KafkaAuthError naming the brokers, exit 2", () => {
    const raw = asRetrierThrows(saslRefusal());
    const e = kafkaProducerFailure(raw, client, 40) as KafkaAuthError;
    expect(e).toBeInstanceOf(KafkaAuthError);
    expect(e.retriable).toBe(false);
    expect(e.cause).toBe(raw);
    expect(e.message).toBe(`Kafka at k1:9092,k2:9092 refused the credentials: ${saslRefusal().message}`);
    expect(exitCodeOf(e)).toBe(2);
  });

  it("the broker unreachable past the retries: a retriable KafkaUnavailableError, one line, how long and which brokers, exit 1", () => {
    const raw = new KafkaJSNonRetriableError(refused(9092), { cause: refused(9092) });
    const e = kafkaProducerFailure(raw, client, 21_260) as KafkaUnavailableError;
    expect(e).toBeInstanceOf(KafkaUnavailableError);
    expect(e.retriable).toBe(true);
    expect(e.cause).toBe(raw);
    expect(e.message).toBe("Kafka at k1:9092,k2:9092 was unreachable for 21.3 s, 8 retries spent (MUFOLD_KAFKA_RETRIES, backoff 200 ms up to 5000 ms): Connection error: connect ECONNREFUSED 127.0.0.1:9092");
    expect(exitCodeOf(e)).toBe(1);
    expect(fatalMessage(e)).toBe(e.message);
  });

  it("anything else passes unchanged: a permanent refusal, a MufoldError of its own", () => {
    const tooLarge = new KafkaJSProtocolError({ message: "The request included a message larger than the max message size the server will accept", type: "MESSAGE_TOO_LARGE", code: 10, retriable: false } as unknown as Error);
    expect(kafkaProducerFailure(tooLarge, client, 5)).toBe(tooLarge);
    const own = new MufoldError("the broker refused to create t: …", { cause: tooLarge });
    expect(kafkaProducerFailure(own, client, 5)).toBe(own);
  });
});
