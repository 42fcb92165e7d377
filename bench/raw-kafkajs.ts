/**
 * Raw kafkajs consumption of a topic, in its own process: stock kafkajs (with
 * mufold's codecs, which kafkajs lacks), nothing of mufold's consumer, so the
 * record decoder is kafkajs's own (src/adapters/kafka/record-decoder.ts is
 * installed by mufold's consumer module, which this script does not import).
 * Prints one JSON line: wall seconds, CPU per record, its thread split and the
 * young generation's traffic. The pipeline bench spawns it.
 *
 *   npx tsx bench/raw-kafkajs.ts --brokers host:port --topic T --group G --records N [--fast-decoder]
 */
import { parseArgs } from "node:util";
import { createKafka } from "../src/adapters/kafka/client.js";
import { startThreadSplit } from "./cpu-split.js";
import { startHeapTraffic } from "./heap-traffic.js";

const { values } = parseArgs({
  options: { brokers: { type: "string" }, topic: { type: "string" }, group: { type: "string" }, records: { type: "string" }, "fast-decoder": { type: "boolean", default: false } },
});
if (values["fast-decoder"]) {
  const { installRecordDecoder } = await import("../src/adapters/kafka/record-decoder.js");
  if (!installRecordDecoder()) throw new Error("the record decoder could not be installed");
}
const total = Number(values.records);
const kafka = createKafka({ brokers: values.brokers!.split(","), clientId: "bench-raw" });
const consumer = kafka.consumer({ groupId: values.group!, maxWaitTimeInMs: 100 });
await consumer.connect();
await consumer.subscribe({ topic: values.topic!, fromBeginning: true });
let seen = 0;
// Timed like the fold: from run() (group join included) to the last record.
const t0 = Date.now();
const cpu0 = process.cpuUsage();
const split = startThreadSplit();
const heap = startHeapTraffic();
await new Promise<void>((resolve) => {
  void consumer.run({
    eachBatchAutoResolve: true,
    eachBatch: async ({ batch }) => {
      seen += batch.messages.length;
      if (seen >= total) resolve();
    },
  });
});
const seconds = (Date.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
const threads = split.stop(total);
const traffic = heap.stop(total);
await consumer.disconnect();
process.stdout.write(JSON.stringify({ seconds, cpuUs: cpu.user + cpu.system, split: threads, traffic }) + "\n");
