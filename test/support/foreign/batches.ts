/** Drives confluent_batches.py (confluent-kafka, librdkafka): compressed, partition-pinned or transactional sends. */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { run, tempDir, type ForeignClients } from "./foreign.js";

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), "confluent_batches.py");

export interface BatchesSpec {
  compression: "gzip" | "snappy" | "lz4" | "zstd" | "none";
  /** null: librdkafka's partitioner on the scope key. */
  partition: number | null;
  /** Set: each group is one transaction, committed or aborted. */
  transactionalId: string | null;
  groups: { commit: boolean; lines: readonly string[] }[];
}

/** Send the groups; returns how many records the broker acknowledged (aborted ones included). */
export async function confluentBatches(c: ForeignClients, brokers: readonly string[], topic: string, spec: BatchesSpec): Promise<number> {
  const tmp = tempDir();
  try {
    const file = join(tmp.dir, "spec.json");
    writeFileSync(file, JSON.stringify({ compression: spec.compression, partition: spec.partition, transactional_id: spec.transactionalId, groups: spec.groups }));
    const { stdout } = await run(c.python, [SCRIPT, "--brokers", brokers.join(","), "--topic", topic, "--spec", file]);
    return (JSON.parse(stdout.toString("utf8")) as { delivered: number }).delivered;
  } finally {
    await tmp.cleanup();
  }
}
