import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PyFloat,
  canonicalJson,
  parseContractTimestamp,
  parsePyJson,
  pyFloatRepr,
  pyFromIsoFormat,
  pyRound6,
  pyStrStrip,
  utcInstant,
  compareInstants,
  pyStrCompare,
} from "../../src/core/index.js";
import { floatValue, isoTimestampText, unicodeString } from "../support/arbitraries.js";
import { diffSeed } from "../support/differential.js";
import { ReferenceOracle } from "../support/reference.js";

let oracle: ReferenceOracle;
beforeAll(async () => {
  oracle = await ReferenceOracle.start();
});
afterAll(async () => {
  await oracle?.close();
});

const runs = (n: number) => ({ numRuns: n, seed: diffSeed() });

describe("canonical JSON against Python's json.dumps", () => {
  it("floats (repr, -0.0, integral floats, exponents)", async () => {
    await fc.assert(
      fc.asyncProperty(floatValue(), async (x) => {
        const text = pyFloatRepr(x);
        const r = await oracle.request<{ ok: boolean; out: string }>({ op: "canonical", text: `[${text}]` });
        expect(canonicalJson([new PyFloat(x)])).toBe(r.out);
      }),
      runs(1000),
    );
  });

  it("round(x, 6)", async () => {
    await fc.assert(
      fc.asyncProperty(floatValue().filter((x) => Math.abs(x) < 1e300), async (x) => {
        const r = await oracle.request<{ ok: boolean; out: string }>({ op: "round6", x: pyFloatRepr(x) });
        expect(pyFloatRepr(pyRound6(x))).toBe(r.out);
      }),
      runs(1000),
    );
  });

  it("strings and keys (escapes, astral characters, key order)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(unicodeString(), unicodeString()), { maxLength: 6 }), async (pairs) => {
        const obj: Record<string, string> = {};
        for (const [k, v] of pairs) obj[k] = v;
        const text = JSON.stringify(obj);
        const r = await oracle.request<{ ok: boolean; out: string }>({ op: "canonical", text });
        expect(canonicalJson(parsePyJson(text))).toBe(r.out);
      }),
      runs(1000),
    );
  });

  it("str(value or '').strip() coercion of scalars", async () => {
    const scalar = fc.oneof(
      unicodeString().map((s) => JSON.stringify(s)),
      floatValue().map(pyFloatRepr),
      fc.integer().map(String),
      fc.constantFrom("true", "false", "null", "0", "0.0", "-0.0", "[]", "{}", "1e400", "NaN"),
    );
    await fc.assert(
      fc.asyncProperty(scalar, async (text) => {
        const r = await oracle.request<{ ok: boolean; out: string }>({ op: "pystr", value: text });
        expect(pyStrStrip(parsePyJson(text))).toBe(r.out);
      }),
      runs(1000),
    );
  });
});

describe("timestamps against CPython 3.11 datetime.fromisoformat", () => {
  it("accepts, rejects and reads fields exactly as CPython does", async () => {
    await fc.assert(
      fc.asyncProperty(isoTimestampText(), async (text) => {
        const r = await oracle.request<{ ok: boolean; fields?: number[]; offset_us?: number | null }>({ op: "fromisoformat", text });
        const d = pyFromIsoFormat(text);
        if (!r.ok) {
          expect(d, `CPython rejects ${JSON.stringify(text)}`).toBeNull();
          return;
        }
        expect(d, `CPython accepts ${JSON.stringify(text)}`).not.toBeNull();
        expect([d!.year, d!.month, d!.day, d!.hour, d!.minute, d!.second, d!.microsecond]).toEqual(r.fields);
        expect(d!.offsetMicros).toBe(r.offset_us ?? null);
      }),
      runs(3000),
    );
  });

  it("orders aware timestamps by instant, then raw text", async () => {
    const aware = isoTimestampText().filter((t) => {
      const d = parseContractTimestamp(t);
      return d !== null && d.offsetMicros !== null;
    });
    await fc.assert(
      fc.asyncProperty(fc.array(aware, { minLength: 2, maxLength: 12 }), async (timestamps) => {
        const r = await oracle.request<{ ok: boolean; sorted: string[] }>({ op: "order", timestamps });
        const key = (t: string) => utcInstant(parseContractTimestamp(t)!);
        const ours = [...timestamps].sort((a, b) => compareInstants(key(a), key(b)) || pyStrCompare(a, b));
        expect(ours).toEqual(r.sorted);
      }),
      runs(500),
    );
  });
});
