/**
 * mufold's record decoder (src/adapters/kafka/record-decoder.ts) against
 * kafkajs's own: records written by kafkajs's record encoder (or byte by byte,
 * for what no encoder writes) decode to equal records, property for property
 * and in the same order, or fail alike; the ones it hands back to kafkajs
 * (deltas past 2^53, `__proto__` headers, truncated bytes) too.
 */
import { createRequire } from "node:module";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fastRecordDecoder, kafkajsRecordDecoder, type KafkajsDecoder, type RecordContext } from "../../src/adapters/kafka/record-decoder.js";

const require = createRequire(import.meta.url);
const Decoder = require("kafkajs/src/protocol/decoder.js") as new (buffer: Buffer) => KafkajsDecoder & { readVarIntBytes(): Buffer };
const encodeRecord = require("kafkajs/src/protocol/recordBatch/record/v0/index.js") as (r: {
  offsetDelta?: number;
  timestampDelta?: number | bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, Buffer | null | (Buffer | null)[]>;
}) => { buffer: Buffer };
const { LOG_APPEND_TIME, CREATE_TIME } = require("kafkajs/src/protocol/timestampTypes.js") as { LOG_APPEND_TIME: number; CREATE_TIME: number };

/** Zigzag varint of any width (the protocol's varint and varlong), written here: kafkajs's encoder cannot write null header keys or values. */
function varint(n: bigint): Buffer {
  let z = n >= 0n ? 2n * n : -2n * n - 1n;
  const out: number[] = [];
  while (z >= 0x80n) {
    out.push(Number(z & 0x7fn) | 0x80);
    z >>= 7n;
  }
  out.push(Number(z));
  return Buffer.from(out);
}
/** A copy in an ArrayBuffer of its own (small Buffers otherwise share Node's pool, and so their `.buffer`). */
const own = (bytes: Buffer): Buffer => {
  const copy = Buffer.alloc(bytes.length);
  bytes.copy(copy);
  return copy;
};
const sized = (v: Buffer | null) => (v === null ? varint(-1n) : Buffer.concat([varint(BigInt(v.length)), v]));

/** A record's body (no length prefix) byte by byte, its headers in wire order. */
function rawRecord(r: { offsetDelta: number; timestampDelta: bigint; key: Buffer | null; value: Buffer | null; headers: [Buffer | null, Buffer | null][] }): Buffer {
  return Buffer.concat([Buffer.from([0]), varint(r.timestampDelta), varint(BigInt(r.offsetDelta)), sized(r.key), sized(r.value), varint(BigInt(r.headers.length)), ...r.headers.flatMap(([k, v]) => [sized(k), sized(v)])]);
}

const kafkajsDecode = kafkajsRecordDecoder();
const fastDecode = fastRecordDecoder(kafkajsDecode);

/** A record's bytes as the batch decoder hands them over: without the length prefix. */
function body(encoded: Buffer): Buffer {
  return new Decoder(encoded).readVarIntBytes();
}

type Outcome = { record: unknown; end: number } | { error: string };

function outcome(decode: typeof fastDecode, bytes: Buffer, context: RecordContext): Outcome {
  const decoder = new Decoder(bytes);
  try {
    return { record: decode(decoder, context), end: decoder.offset };
  } catch (error) {
    return { error: (error as Error).constructor.name };
  }
}

/** Both decoders, the same outcome; the record's own property order too. */
function expectSame(bytes: Buffer, context: RecordContext): Outcome {
  const theirs = outcome(kafkajsDecode, bytes, context);
  const ours = outcome(fastDecode, bytes, context);
  expect(ours).toEqual(theirs);
  if ("record" in ours && "record" in theirs) {
    expect(Object.keys(ours.record as object)).toEqual(Object.keys(theirs.record as object));
    const h = (r: unknown) => (r as { headers: object }).headers;
    expect(Object.keys(h(ours.record))).toEqual(Object.keys(h(theirs.record)));
    expect(Object.getPrototypeOf(h(ours.record))).toBe(Object.getPrototypeOf(h(theirs.record)));
  }
  return theirs;
}

const context = (over: Partial<RecordContext> = {}): RecordContext => ({
  firstOffset: "1000",
  firstTimestamp: "1733450000000",
  maxTimestamp: "1733450009999",
  magicByte: 2,
  isControlBatch: false,
  timestampType: CREATE_TIME,
  ...over,
});

const b = (s: string) => Buffer.from(s, "utf8");

describe("the record decoder", () => {
  it("decodes an observation record as kafkajs does: offset, timestamp, key, value, headers", () => {
    const bytes = body(encodeRecord({ offsetDelta: 7, timestampDelta: 42, key: b("scope-key"), value: b('{"a":1}'), headers: { schema: b("v0"), "content-type": b("application/json") } }).buffer);
    const theirs = expectSame(bytes, context());
    expect(theirs).toMatchObject({ record: { offset: "1007", timestamp: "1733450000042", key: b("scope-key"), headers: { schema: b("v0") } }, end: bytes.length });
  });

  it("keeps null keys and values, a tombstone's", () => {
    expectSame(body(encodeRecord({ key: null, value: null }).buffer), context());
  });

  it("lists a repeated header's values, and keeps a null value", () => {
    expectSame(body(encodeRecord({ key: b("k"), value: b("v"), headers: { trace: [b("1"), b("2"), b("3")], other: b("x") } }).buffer), context());
    const headers: [Buffer | null, Buffer | null][] = [[b("trace"), b("1")], [b("other"), null], [b("trace"), null], [null, b("n")]];
    const theirs = expectSame(rawRecord({ offsetDelta: 0, timestampDelta: 0n, key: b("k"), value: b("v"), headers }), context());
    expect(theirs).toMatchObject({ record: { headers: { trace: [b("1"), null], other: null, null: b("n") } } });
  });

  it("defines headers named like Object.prototype's properties as kafkajs's spread does", () => {
    for (const name of ["__proto__", "toString", "constructor", "hasOwnProperty"]) {
      expectSame(body(encodeRecord({ key: b("k"), value: b("v"), headers: { [name]: [b("x"), b("y")] } }).buffer), context());
    }
  });

  it("computes offsets and timestamps past 2^53 as kafkajs does (its decoder's, by BigInt)", () => {
    const bytes = body(encodeRecord({ offsetDelta: 5, timestampDelta: 2n ** 60n, key: b("k"), value: b("v") }).buffer);
    const theirs = expectSame(bytes, context({ firstOffset: "9007199254740990" }));
    expect(theirs).toMatchObject({ record: { offset: "9007199254740995" } });
    expectSame(body(encodeRecord({ offsetDelta: 1, key: b("k"), value: b("v") }).buffer), context({ firstOffset: "9223372036854775806" }));
  });

  it("takes a log-append time from the batch, and a negative delta or a -1 first timestamp as kafkajs does", () => {
    const bytes = body(encodeRecord({ offsetDelta: 3, timestampDelta: -5, key: b("k"), value: b("v") }).buffer);
    expect(expectSame(bytes, context({ timestampType: LOG_APPEND_TIME }))).toMatchObject({ record: { timestamp: "1733450009999" } });
    expect(expectSame(bytes, context())).toMatchObject({ record: { timestamp: "1733449999995" } });
    expectSame(bytes, context({ firstTimestamp: "-1" }));
    expectSame(bytes, context({ isControlBatch: true }));
  });

  it("reads timestamp deltas around the 7-byte varlong bound exactly, or hands them to kafkajs", () => {
    for (const delta of [2n ** 48n - 1n, 2n ** 48n, -(2n ** 48n), -(2n ** 48n) - 1n, 2n ** 49n, 2n ** 53n + 1n, -(2n ** 53n)]) {
      for (const first of ["0", "-1", String(2n ** 52n), String(-(2n ** 52n))]) {
        const theirs = expectSame(rawRecord({ offsetDelta: 0, timestampDelta: delta, key: null, value: null, headers: [] }), context({ firstTimestamp: first }));
        expect(theirs).toMatchObject({ record: { timestamp: String(BigInt(first) + delta) } });
      }
    }
  });

  it("reads a falsy log-append time, malformed lengths and counts, and over-long varints as kafkajs does", () => {
    const bytes = rawRecord({ offsetDelta: 2, timestampDelta: 9n, key: b("k"), value: b("v"), headers: [] });
    expectSame(bytes, context({ timestampType: LOG_APPEND_TIME, maxTimestamp: "" }));
    const head = Buffer.concat([Buffer.from([0]), varint(0n), varint(1n)]);
    expectSame(Buffer.concat([head, varint(-2n), b("kv")]), context()); // a key length below -1
    expectSame(Buffer.concat([head, varint(1n), b("k"), varint(-5n)]), context()); // a value length below -1
    expectSame(Buffer.concat([head, sized(null), sized(null), varint(-1n)]), context()); // a header count of -1
    expectSame(Buffer.concat([head, sized(null), sized(null), varint(-2n)]), context()); // below -1
    expectSame(Buffer.concat([head, sized(null), sized(null), varint(1n), varint(-3n), b("abc"), sized(null)]), context()); // a header key length below -1
    const overLong = Buffer.from([0x82, 0x80, 0x80, 0x80, 0x80, 0x00]); // 1, written in six bytes
    expectSame(Buffer.concat([Buffer.from([0]), varint(0n), overLong, sized(null), sized(null), varint(0n)]), context());
    expectSame(Buffer.concat([Buffer.from([0]), Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]), varint(0n), sized(null), sized(null), varint(0n)]), context());
  });

  it("fails as kafkajs does on a batch context its batch decoder never makes", () => {
    const bytes = rawRecord({ offsetDelta: 1, timestampDelta: 0n, key: null, value: null, headers: [] });
    for (const first of ["1e3", "5.0", "", "0x10", " 7"]) expectSame(bytes, context({ firstOffset: first }));
    expectSame(bytes, context({ firstOffset: null as unknown as string }));
    expectSame(bytes, context({ firstTimestamp: "1e3" }));
    expectSame(bytes, undefined as unknown as RecordContext);
  });

  it("hands out views of the record's bytes for its key and value, as kafkajs does (stand-in records are recognised by their value's buffer)", () => {
    const bytes = own(rawRecord({ offsetDelta: 0, timestampDelta: 0n, key: b("k"), value: b("value"), headers: [[b("h"), b("x")]] }));
    expectSame(bytes, context());
    const ours = fastDecode(new Decoder(bytes), context()) as { key: Buffer; value: Buffer };
    for (const view of [ours.key, ours.value]) expect(view.buffer).toBe(bytes.buffer);
  });

  it("shares one headers object among records with the same header bytes, holding none of their bytes", () => {
    type Decoded = { headers: Record<string, Buffer | Buffer[]> };
    const record = (offsetDelta: number, headers: [Buffer | null, Buffer | null][]) => own(rawRecord({ offsetDelta, timestampDelta: 0n, key: b("k"), value: b("v"), headers }));
    const [first, second, other, again] = [record(0, [[b("schema"), b("x")]]), record(1, [[b("schema"), b("x")]]), record(2, [[b("schema"), b("y")], [b("schema"), b("z")]]), record(3, [[b("schema"), b("x")]])];
    for (const bytes of [first, second, other, again]) expectSame(bytes, context());
    const decoded = [first, second, other, again].map((bytes) => fastDecode(new Decoder(bytes), context()) as Decoded);
    expect(decoded[1]!.headers).toBe(decoded[0]!.headers);
    expect(decoded[2]!.headers).not.toBe(decoded[0]!.headers);
    const records = [first, second, other, again];
    const values = decoded.flatMap((d) => [d.headers.schema!].flat());
    for (const value of values) expect(records.map((bytes) => bytes.buffer)).not.toContain(value.buffer);
    for (const bytes of records) bytes.fill(0); // the fetch's buffers reused: the headers handed out stay as they were read
    expect(decoded.map((d) => d.headers)).toEqual([{ schema: b("x") }, { schema: b("x") }, { schema: [b("y"), b("z")] }, { schema: b("x") }]);
  });

  it("fails, or not, as kafkajs does on every truncation of a record", () => {
    const bytes = body(encodeRecord({ offsetDelta: 300, timestampDelta: 70000, key: b("key"), value: b("value"), headers: { h: b("x") } }).buffer);
    for (let n = 0; n < bytes.length; n++) expectSame(bytes.subarray(0, n), context());
  });

  it("decodes random records as kafkajs does", () => {
    const bytesOrNull = fc.option(fc.uint8Array({ maxLength: 40 }).map((u) => Buffer.from(u)), { nil: null });
    fc.assert(
      fc.property(
        fc.record({
          offsetDelta: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
          timestampDelta: fc.oneof(fc.bigInt({ min: -1000000n, max: 1000000n }), fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n })),
          key: bytesOrNull,
          value: bytesOrNull,
          headers: fc.array(fc.tuple(fc.option(fc.constantFrom("a", "b", "schema", "", "0", "1", "__proto__", "toString", "constructor", "hasOwnProperty", "é").map(b), { nil: null }), bytesOrNull), { maxLength: 5 }),
        }),
        fc.bigInt({ min: -1n, max: 2n ** 62n }),
        fc.bigInt({ min: -1n, max: 2n ** 60n }),
        (record, firstOffset, firstTimestamp) => {
          expectSame(rawRecord(record), context({ firstOffset: String(firstOffset), firstTimestamp: String(firstTimestamp) }));
        },
      ),
      { numRuns: 400 },
    );
  });
});
