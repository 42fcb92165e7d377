/**
 * Raw kafkajs consumption of a topic, in its own process: stock kafkajs (with
 * mufold's codecs, which kafkajs lacks), nothing of mufold's consumer, so the
 * record decoder is kafkajs's own (src/adapters/kafka/record-decoder.ts is
 * installed by mufold's consumer module, which this script does not import).
 * Prints one JSON line: wall seconds, CPU per record, its thread split and the
 * young generation's traffic. The pipeline bench spawns it.
 *
 * --decide also decides every record as the fold does (src/fold/record-decision.ts: parse and check the observation,
 * the id's sha256 and the fingerprint's) and keeps nothing: the floor under a fold that keeps no state and writes
 * nothing. It reads with mufold's record decoder (as --fast-decoder), and the line also gives the records accepted.
 *
 * --passes N reads the topic N times, each with a group of its own, and prints the last (2: a warm process's cost).
 *
 *   npx tsx bench/raw-kafkajs.ts --brokers host:port --topic T --group G --records N [--fast-decoder | --decide] [--passes N]
 */
import { parseArgs } from "node:util";
import { createKafka } from "../src/adapters/kafka/client.js";
import { decideRecord, type DecisionOptions } from "../src/fold/record-decision.js";
import { settingDefault } from "../src/config/settings.js";
import { startThreadSplit } from "./cpu-split.js";
import { startHeapTraffic } from "./heap-traffic.js";

const { values } = parseArgs({
  options: { brokers: { type: "string" }, topic: { type: "string" }, group: { type: "string" }, records: { type: "string" }, "fast-decoder": { type: "boolean", default: false }, decide: { type: "boolean", default: false }, passes: { type: "string", default: "1" } },
});
const decide = values.decide;
if (values["fast-decoder"] || decide) {
  const { installRecordDecoder } = await import("../src/adapters/kafka/record-decoder.js");
  if (!installRecordDecoder()) throw new Error("the record decoder could not be installed");
}
const total = Number(values.records);
const passes = Number(values.passes);
if (!Number.isInteger(passes) || passes < 1) throw new Error(`--passes: a positive integer, not ${values.passes}`);
const kafka = createKafka({ brokers: values.brokers!.split(","), clientId: "bench-raw" });
// The fold's decision options, from the settings' defaults (as a worker started without flags has them).
const decision: DecisionOptions = { reducerVersion: settingDefault("reducerVersion"), maxValueBytes: settingDefault("maxValueBytes") };

/** One read of the whole topic by a group of its own, measured as the fold's: from run() (group join included) to the last record. */
async function pass(groupId: string) {
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic: values.topic!, fromBeginning: true });
  let seen = 0;
  let accepted = 0;
  const t0 = Date.now();
  const cpu0 = process.cpuUsage();
  const split = startThreadSplit();
  const heap = startHeapTraffic();
  await new Promise<void>((resolve) => {
    void consumer.run({
      eachBatchAutoResolve: true,
      eachBatch: async ({ batch }) => {
        seen += batch.messages.length;
        if (decide) for (const m of batch.messages) if (decideRecord(m, decision).kind === "accept") accepted++;
        if (seen >= total) resolve();
      },
    });
  });
  const seconds = (Date.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const threads = split.stop(total);
  const traffic = heap.stop(total);
  await consumer.disconnect();
  return { seconds, cpuUs: cpu.user + cpu.system, split: threads, traffic, ...(decide ? { accepted } : {}) };
}

// Each pass after the first reads in a process whose code V8 has compiled already (a worker that has run a while).
let last: Awaited<ReturnType<typeof pass>> | undefined;
for (let i = 1; i <= passes; i++) last = await pass(i === 1 ? values.group! : `${values.group!}-${i}`);
process.stdout.write(JSON.stringify(last) + "\n");
