/**
 * A partitioner that picks each message's partition once, as the Java
 * producer does when it appends a record to a batch.
 *
 * Why: kafkajs asks its partitioner again on every retry of a send. A message
 * without a key then lands on the next round-robin partition, so a retried
 * batch can carry a different set of records under the same first sequence
 * number. If the first attempt was written (a timeout, or another partition's
 * error in the same response), the broker sees neither a duplicate nor the
 * next sequence and answers OUT_OF_ORDER_SEQUENCE_NUMBER, which is fatal for
 * the send. Remembering the choice per message object (kafkajs hands the same
 * objects to every attempt) keeps every retried batch identical.
 */
import { createRequire } from "node:module";
import type { ICustomPartitioner, PartitionerArgs } from "kafkajs";

const require = createRequire(import.meta.url);
type KeyHash = (key: Buffer | string) => number;
const murmur2 = require("kafkajs/src/producer/partitioners/default/murmur2.js") as KeyHash;
const partitionerOf = require("kafkajs/src/producer/partitioners/legacy/partitioner.js") as (hash: KeyHash) => ICustomPartitioner;

/** Distinct string keys whose hash is remembered; past it the memo starts over (keys are scopes: few, repeated). */
const MAX_REMEMBERED_KEYS = 10_000;

/**
 * kafkajs's murmur2 of a string key, remembered: it encodes the key and mixes
 * each 4 bytes through Long's BigInts (~1.7 µs a record sent), and a producer's
 * keys are its scopes, sent again and again. Buffers are hashed each time.
 */
function rememberedMurmur2(): KeyHash {
  let memo = new Map<string, number>();
  return (key) => {
    if (typeof key !== "string") return murmur2(key);
    let h = memo.get(key);
    if (h === undefined) {
      h = murmur2(key);
      if (memo.size >= MAX_REMEMBERED_KEYS) memo = new Map();
      memo.set(key, h);
    }
    return h;
  };
}

/** kafkajs's DefaultPartitioner (murmur2, Java-compatible), built over the remembered hash: the same partitions. */
export const MemoMurmur2Partitioner: ICustomPartitioner = () => partitionerOf(rememberedMurmur2())();

export function createStablePartitioner(base: ICustomPartitioner = MemoMurmur2Partitioner): ICustomPartitioner {
  return () => {
    const pick = base();
    const chosen = new WeakMap<object, { topic: string; partition: number }>();
    return (args: PartitionerArgs) => {
      const known = chosen.get(args.message);
      // A partition past the topic's current count (it shrank only if recreated) is chosen afresh.
      if (known !== undefined && known.topic === args.topic && known.partition < args.partitionMetadata.length) return known.partition;
      const partition = pick(args);
      chosen.set(args.message, { topic: args.topic, partition });
      return partition;
    };
  };
}
