/**
 * The writes of one apply (delta.ts makes them, a store applies them), as
 * columns: each op's opcode and part as one number (its slot), its field and
 * its value. As objects they were ~56 bytes of young garbage each, about six
 * a record. A caller may still hand a store a list of op objects (the tests'
 * and tools' form): `PartOps.from` turns it into columns.
 */
import type { Fragment } from "../core/fragment.js";
import { STORED_PARTS, type StoredPart } from "./stored-names.js";

/** RPUSH appends to the offset index (part `x`) only. */
export type OpCode = "HSET" | "HDEL" | "ZADD" | "ZREM" | "DEL" | "RPUSH";

/** One op as an object. */
export interface PartOp {
  op: OpCode;
  part: StoredPart;
  field: string;
  /** An HSET's value ("" for the other opcodes): a subject's or a history entry's fragment may be its bytes. */
  value: Fragment;
}

export const OP_CODES: readonly OpCode[] = ["HSET", "HDEL", "ZADD", "ZREM", "DEL", "RPUSH"];

/** Opcode and part as one number: `OP_CODES.indexOf(op) * STORED_PARTS.length + STORED_PARTS.indexOf(part)`. */
export const SLOTS = OP_CODES.length * STORED_PARTS.length;
const slotOf = (op: OpCode, part: StoredPart): number => OP_CODES.indexOf(op) * STORED_PARTS.length + STORED_PARTS.indexOf(part);

/** A slot's opcode and part. */
export const opOfSlot = (slot: number): OpCode => OP_CODES[Math.floor(slot / STORED_PARTS.length)]!;
export const partOfSlot = (slot: number): StoredPart => STORED_PARTS[slot % STORED_PARTS.length]!;

export class PartOps implements Iterable<PartOp> {
  private slots: Uint8Array;
  /** Each op's field, then room for more (read below `length` only). */
  fields: string[];
  /** Each op's value, as `fields`. */
  values: Fragment[];
  private count = 0;

  /**
   * `capacity`: the ops expected (planned from the changes): the columns are made that long, so an apply's ops
   * are not copied into longer lists as they come (growing by push was most of what they cost).
   */
  constructor(capacity = 16) {
    const n = Math.max(1, capacity);
    this.slots = new Uint8Array(n);
    this.fields = new Array<string>(n);
    this.values = new Array<Fragment>(n);
  }

  get length(): number {
    return this.count;
  }

  /** Append one op. */
  push(op: OpCode, part: StoredPart, field: string, value: Fragment = ""): this {
    const i = this.count;
    if (i === this.slots.length) this.grow();
    this.slots[i] = slotOf(op, part);
    this.fields[i] = field;
    this.values[i] = value;
    this.count = i + 1;
    return this;
  }

  private grow(): void {
    const n = this.slots.length;
    const slots = new Uint8Array(2 * n);
    slots.set(this.slots);
    this.slots = slots;
    const fields = new Array<string>(2 * n);
    const values = new Array<Fragment>(2 * n);
    for (let i = 0; i < n; i++) {
      fields[i] = this.fields[i]!;
      values[i] = this.values[i]!;
    }
    this.fields = fields;
    this.values = values;
  }

  slot(i: number): number {
    return this.slots[i]!;
  }

  op(i: number): OpCode {
    return opOfSlot(this.slots[i]!);
  }

  part(i: number): StoredPart {
    return partOfSlot(this.slots[i]!);
  }

  /** Op i as an object (made on each call). */
  get(i: number): PartOp {
    return { op: this.op(i), part: this.part(i), field: this.fields[i]!, value: this.values[i]! };
  }

  /** The ops as objects, in order. */
  toArray(): PartOp[] {
    return Array.from({ length: this.length }, (_, i) => this.get(i));
  }

  *[Symbol.iterator](): Iterator<PartOp> {
    for (let i = 0; i < this.length; i++) yield this.get(i);
  }

  /** `ops` as columns (the same object when it is columns already). */
  static from(ops: PartOps | readonly PartOp[]): PartOps {
    if (ops instanceof PartOps) return ops;
    const out = new PartOps(ops.length);
    for (const o of ops) {
      if (!OP_CODES.includes(o.op)) throw new Error(`unknown op ${String(o.op)}`);
      if (!STORED_PARTS.includes(o.part)) throw new Error(`unknown part ${String(o.part)}`);
      out.push(o.op, o.part, o.field, o.value);
    }
    return out;
  }
}
