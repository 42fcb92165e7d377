/**
 * Read the offsets coverage compares (consumers/verify/coverage.ts): the fold group's
 * committed offsets, the live generation's marks (control hash) and the log's
 * end offsets, in that order. A fold raises a mark before it commits, so
 * reading the commits first never shows a mark behind a commit that a batch
 * sealed between the two reads.
 */
import type { Admin } from "kafkajs";
import { groupOffsets, partitionOffsets } from "../../src/adapters/kafka/topics.js";
import type { ControlStore } from "../../src/fold/control-store.js";
import { marksOfTopic, type PartitionOffsets } from "./coverage.js";

export async function readPartitionOffsets(admin: Admin, control: Pick<ControlStore, "generationFields">, topic: string, group: string, generation: number | null): Promise<PartitionOffsets[]> {
  const committed = await groupOffsets(admin, group, topic);
  const marks = generation === null ? new Map<number, bigint>() : marksOfTopic(await control.generationFields(generation, "mark"), topic);
  const ends = await partitionOffsets(admin, topic);
  return ends.map((e) => {
    const c = committed.get(e.partition);
    // groupOffsets gives -1 where the group has committed nothing.
    return { topic, partition: e.partition, mark: marks.get(e.partition) ?? null, committed: c === undefined || c < 0n ? null : c, end: e.high };
  });
}
