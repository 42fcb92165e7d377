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
import kafkajs from "kafkajs";
import type { ICustomPartitioner, PartitionerArgs } from "kafkajs";

const { Partitioners } = kafkajs;

export function createStablePartitioner(base: ICustomPartitioner = Partitioners.DefaultPartitioner): ICustomPartitioner {
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
