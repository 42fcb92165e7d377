/**
 * What the fold checks per partition so that a changed log is never folded
 * as if it were the old one, and what it seals after each batch:
 *
 * - origin: the fingerprint of the record at offset 0. A generation records it
 *   the first time it folds offset 0 and checks it every later time, so a
 *   topic deleted and recreated (its offsets start again at 0, its committed
 *   group offsets are gone) is refused before anything is written.
 * - marks: the next offset the generation has folded per partition, raised by
 *   the seal that precedes every commit. A partition whose end offset is below
 *   its mark was truncated or recreated: refused too.
 */
import { createHash } from "node:crypto";
import { TopicOriginError, type ChangeEntries, type ControlStore } from "../../src/fold/control-store.js";
import type { SourceRecord } from "../../src/fold/source-record.js";

/** `<topic>:<partition>`, the field name of marks and origins in the control hash. */
export function partitionField(topic: string, partition: number): string {
  return `${topic}:${partition}`;
}

/** sha256 over the record's timestamp, key, value and headers (lengths framed), hex. */
export function originFingerprint(record: SourceRecord): string {
  const h = createHash("sha256");
  const part = (b: Buffer | string | null | undefined) => {
    const buf = b === null || b === undefined ? Buffer.alloc(0) : Buffer.isBuffer(b) ? b : Buffer.from(b);
    h.update(`${b === null || b === undefined ? -1 : buf.length}:`);
    h.update(buf);
  };
  part(record.timestamp ?? "");
  part(record.key);
  part(record.value);
  for (const name of Object.keys(record.headers ?? {}).sort()) {
    const v = record.headers![name];
    for (const one of Array.isArray(v) ? v : [v]) {
      part(name);
      part(one);
    }
  }
  return h.digest("hex");
}

export class PartitionGuard {
  /** Marks of the generation being written, as loaded or sealed by this process. */
  private readonly marks = new Map<string, bigint>();
  private generation: number | undefined;

  constructor(
    private readonly control: ControlStore,
    /** "live" for the fold, the build token for a replay. */
    private readonly mode: string,
    /**
     * The partition's end offset now. A batch's high watermark is as old as its
     * fetch: held through an outage while a replay sealed further marks, it can
     * be below a mark on a log that was never truncated. Only a fresh end
     * offset below the mark proves truncation.
     */
    private readonly endOffset?: (topic: string, partition: number) => Promise<bigint>,
  ) {}

  /** Forget cached marks (a new generation, or Redis may have changed under us). */
  reset(generation: number): void {
    if (this.generation !== generation) this.marks.clear();
    this.generation = generation;
  }

  /**
   * Before a batch is applied: refuse a partition whose log no longer is the
   * one this generation folded. `highWatermark` is the partition's end offset
   * as the broker reported it with the batch; `known`, the partition's mark
   * when the caller keeps it.
   */
  async check(generation: number, topic: string, partition: number, records: readonly SourceRecord[], highWatermark: bigint, known?: bigint): Promise<void> {
    this.reset(generation);
    const field = partitionField(topic, partition);
    const first = records[0];
    if (first !== undefined && first.offset === "0") await this.control.checkOrigin(generation, this.mode, field, originFingerprint(first));
    // `known`: the caller keeps the partition's position itself (the live fold: fold-positions.ts).
    let mark = known ?? this.marks.get(field);
    if (mark === undefined) {
      const stored = (await this.control.generationFields(generation, "mark")).get(field);
      mark = stored === undefined ? 0n : BigInt(stored);
      this.marks.set(field, mark);
    }
    if (highWatermark < mark) {
      const now = this.endOffset === undefined ? highWatermark : await this.endOffset(topic, partition);
      if (now < mark) throw new TopicOriginError(field, generation);
    }
  }

  /**
   * After the applies, before the commit: the generation is still ours (and no
   * promote holds the fleet); the batch did not start past the mark (Redis did
   * not roll back); append the batch's change entries; raise the partition's mark.
   */
  async seal(generation: number, topic: string, partition: number, nextOffset: bigint, firstOffset?: bigint, changes?: ChangeEntries): Promise<void> {
    const field = partitionField(topic, partition);
    await this.control.seal(generation, this.mode, new Map([[field, nextOffset]]), firstOffset === undefined ? new Map() : new Map([[field, firstOffset]]), changes);
    if (this.generation === generation && nextOffset > (this.marks.get(field) ?? 0n)) this.marks.set(field, nextOffset);
  }
}
