/**
 * Raw kafkajs consumption of a topic, in its own process: stock kafkajs (with
 * mufold's codecs, which kafkajs lacks), nothing of mufold's consumer, so the
 * record decoder is kafkajs's own (src/adapters/kafka/record-decoder.ts is
 * installed by mufold's consumer module, which this script does not import).
 * Prints one JSON line: wall seconds, CPU per record, its thread split and the
 * young generation's traffic. The pipeline bench spawns it.
 *
 * --fast-decoder reads as the fold reads: mufold's record decoder, and the fetch sizes and partitions at once of a
 * worker started with the settings of this environment (--fetch-max-bytes, --partition-fetch-max-bytes and
 * --partitions-concurrency override them); without it, kafkajs's own defaults.
 *
 * --decide reads so, and also decides every record as the fold does (src/fold/record-decision.ts: parse and check the
 * observation, the id's sha256 and the fingerprint's; --reducer-version and --max-value-bytes as a worker has them)
 * and keeps nothing: the floor under a fold that keeps no state and writes nothing. The line also gives the records
 * seen and accepted and a digest of the identities they make (identity-set.ts), for the caller to check against the fold's.
 *
 * --passes N reads the topic N times, each with a group of its own, and prints the last: 2 gives a process whose
 * code V8 has compiled and whose caches (repeated strings, identities) hold these records' values.
 *
 * Run alone, it re-runs itself under a worker's V8 flags and allocator (bench/mufold-flags.ts), as the benches do.
 *
 *   npx tsx bench/raw-kafkajs.ts --brokers host:port --topic T --group G --records N [--fast-decoder | --decide] [--passes N]
 */
import { parseArgs } from "node:util";
import { createKafka } from "../src/adapters/kafka/client.js";
import { decideRecord, type DecisionOptions } from "../src/fold/record-decision.js";
import { resolveSettings } from "../src/config/settings.js";
import { startThreadSplit } from "./cpu-split.js";
import { startHeapTraffic } from "./heap-traffic.js";
import { identitySetDigest } from "./identity-set.js";
import { runUnderMufoldFlags } from "./mufold-flags.js";

await runUnderMufoldFlags();

const { values } = parseArgs({
  options: {
    brokers: { type: "string" },
    topic: { type: "string" },
    group: { type: "string" },
    records: { type: "string" },
    "fast-decoder": { type: "boolean", default: false },
    decide: { type: "boolean", default: false },
    passes: { type: "string", default: "1" },
    "fetch-max-bytes": { type: "string" },
    "partition-fetch-max-bytes": { type: "string" },
    "partitions-concurrency": { type: "string" },
    "reducer-version": { type: "string" },
    "max-value-bytes": { type: "string" },
  },
});
const decide = values.decide;
const asTheFold = values["fast-decoder"] || decide;
// A worker's settings in this environment, with the flags given (checked as a worker checks them).
const worker = resolveSettings({
  "fetch-max-bytes": values["fetch-max-bytes"],
  "partition-fetch-max-bytes": values["partition-fetch-max-bytes"],
  "partitions-concurrency": values["partitions-concurrency"],
  "reducer-version": values["reducer-version"],
  "max-value-bytes": values["max-value-bytes"],
});
if (asTheFold) {
  const { installRecordDecoder } = await import("../src/adapters/kafka/record-decoder.js");
  if (!installRecordDecoder()) throw new Error("the record decoder could not be installed");
}
const total = Number(values.records);
const passes = Number(values.passes);
if (!Number.isInteger(passes) || passes < 1) throw new Error(`--passes: a positive integer, not ${values.passes}`);
const kafka = createKafka({ brokers: values.brokers!.split(","), clientId: "bench-raw" });
const decision: DecisionOptions = { reducerVersion: worker.reducerVersion, maxValueBytes: worker.maxValueBytes };

/** One read of the whole topic by a group of its own, measured as the fold's: from run() (group join included) to the last record. */
async function pass(groupId: string) {
  const consumer = kafka.consumer({
    groupId,
    maxWaitTimeInMs: 100,
    ...(asTheFold ? { maxBytes: worker.fetchMaxBytes, maxBytesPerPartition: worker.partitionFetchMaxBytes } : {}),
  });
  await consumer.connect();
  await consumer.subscribe({ topic: values.topic!, fromBeginning: true });
  let seen = 0;
  let accepted = 0;
  const identities = new Set<string>();
  const t0 = Date.now();
  const cpu0 = process.cpuUsage();
  const split = startThreadSplit();
  const heap = startHeapTraffic();
  await new Promise<void>((resolve) => {
    void consumer.run({
      eachBatchAutoResolve: true,
      partitionsConsumedConcurrently: asTheFold ? worker.partitionsConcurrency : 1,
      eachBatch: async ({ batch }) => {
        seen += batch.messages.length;
        if (decide) {
          for (const m of batch.messages) {
            const d = decideRecord(m, decision);
            if (d.kind !== "accept") continue;
            accepted++;
            identities.add(d.identity);
          }
        }
        if (seen >= total) resolve();
      },
    });
  });
  const seconds = (Date.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const threads = split.stop(total);
  const traffic = heap.stop(total);
  await consumer.disconnect();
  return { seconds, cpuUs: cpu.user + cpu.system, split: threads, traffic, seen, ...(decide ? { accepted, identities: identitySetDigest(identities) } : {}) };
}

// Each pass after the first reads in a process whose code V8 has compiled already (a worker that has run a while).
let last: Awaited<ReturnType<typeof pass>> | undefined;
for (let i = 1; i <= passes; i++) last = await pass(i === 1 ? values.group! : `${values.group!}-${i}`);
process.stdout.write(JSON.stringify(last) + "\n");
