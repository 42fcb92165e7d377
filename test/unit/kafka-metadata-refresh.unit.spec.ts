/**
 * The metadataMaxAgeSeconds setting: how often kafkajs consumers and producers
 * refresh the topics' metadata, hence how soon the fold's group sees partitions
 * added to its topic (test/integration/partitions-added.int.spec.ts runs it).
 * kafkajs takes metadataMaxAge per consumer and producer, so createKafka gives
 * it to each one the client makes.
 */
import kafkajs from "kafkajs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createKafka, kafkaClientSettings } from "../../src/adapters/kafka/client.js";
import { resolveSettings } from "../../src/config/settings.js";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("metadataMaxAgeSeconds", () => {
  it("defaults to 30 s, takes its flag and variable, and refuses what is not a whole number of seconds from 1", () => {
    expect(resolveSettings({}, {}).metadataMaxAgeSeconds).toBe(30);
    expect(resolveSettings({}, { MUFOLD_METADATA_MAX_AGE_SECONDS: "5" }).metadataMaxAgeSeconds).toBe(5);
    expect(resolveSettings({ "metadata-max-age-seconds": "7" }, { MUFOLD_METADATA_MAX_AGE_SECONDS: "5" }).metadataMaxAgeSeconds).toBe(7);
    for (const bad of ["0", "1.5", "1e3", "", "86401"]) {
      expect(() => resolveSettings({}, { MUFOLD_METADATA_MAX_AGE_SECONDS: bad }), bad).toThrow(
        /^invalid setting metadataMaxAgeSeconds \(--metadata-max-age-seconds \/ MUFOLD_METADATA_MAX_AGE_SECONDS\) = .*: must be an integer from 1 to 86400$/,
      );
    }
  });

  it("reaches every kafkajs consumer and producer of a client, in milliseconds; an option of their own wins", () => {
    const consumer = vi.spyOn(kafkajs.Kafka.prototype, "consumer");
    const producer = vi.spyOn(kafkajs.Kafka.prototype, "producer");
    const kafka = createKafka(kafkaClientSettings(resolveSettings({}, { MUFOLD_METADATA_MAX_AGE_SECONDS: "4" }), "-fold"));
    kafka.consumer({ groupId: "g" });
    kafka.consumer({ groupId: "g", metadataMaxAge: 1_000 });
    kafka.producer({ idempotent: true });
    kafka.producer();
    expect(consumer.mock.calls.map(([config]) => config)).toEqual([
      { metadataMaxAge: 4_000, groupId: "g" },
      { metadataMaxAge: 1_000, groupId: "g" },
    ]);
    expect(producer.mock.calls.map(([config]) => config)).toEqual([{ metadataMaxAge: 4_000, idempotent: true }, { metadataMaxAge: 4_000 }]);
  });

  it("gives a client built without the setting its default, not kafkajs's five minutes", () => {
    const consumer = vi.spyOn(kafkajs.Kafka.prototype, "consumer");
    createKafka({ brokers: ["b:9092"], clientId: "c" }).consumer({ groupId: "g" });
    expect(consumer).toHaveBeenCalledWith({ metadataMaxAge: 30_000, groupId: "g" });
  });
});
