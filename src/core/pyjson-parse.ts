/**
 * `json.loads` as CPython 3.11 does it: the same accepted grammar (including
 * NaN/Infinity), the same int/float split by lexeme, and the same error
 * messages with line/column/char positions, so a request that Python refuses
 * is refused here with the same words.
 */
import { lexNumber } from "./json-number.js";
import { PyFloat, type PyObject, type PyValue } from "./pyvalue.js";

/** Python's `json.JSONDecodeError` (a `ValueError`). */
export class PyJsonDecodeError extends Error {
  constructor(
    readonly msg: string,
    readonly doc: string,
    readonly pos: number,
  ) {
    super(formatDecodeError(msg, doc, pos));
    this.name = "JSONDecodeError";
  }
}

/** CPython's limit on int string conversion (sys.get_int_max_str_digits()). */
const INT_MAX_STR_DIGITS = 4300;

function codePointIndex(doc: string, utf16Pos: number): number {
  let n = utf16Pos;
  for (let i = 0; i < utf16Pos - 1; i++) {
    const c = doc.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = doc.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

function formatDecodeError(msg: string, doc: string, pos: number): string {
  // Python counts in code points; JS indexes UTF-16 units.
  const lineno = countNewlines(doc, pos) + 1;
  const lastNl = pos > 0 ? doc.lastIndexOf("\n", pos - 1) : -1;
  const cp = codePointIndex(doc, pos);
  const colno = cp - (lastNl === -1 ? -1 : codePointIndex(doc, lastNl));
  return `${msg}: line ${lineno} column ${colno} (char ${cp})`;
}

function countNewlines(doc: string, end: number): number {
  let n = 0;
  for (let i = doc.indexOf("\n"); i !== -1 && i < end; i = doc.indexOf("\n", i + 1)) n++;
  return n;
}

class StopIteration {
  constructor(readonly pos: number) {}
}

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/** Python's recursion limit stops json.loads on deep nesting (RecursionError). */
export class PyRecursionError extends Error {
  override name = "RecursionError";
}

/** Nesting depth at which CPython's default recursion limit (1000) stops the decoder. */
const MAX_DEPTH = 990;

/**
 * A faster reader for the elements of one list of the top-level object (the
 * request's observations). `read` returns the element's value, with `end()`
 * past it, or null to let the scanner parse the element itself.
 */
export interface ListElementReader {
  readonly key: string;
  /** Elements after this many are left to the scanner (a longer list is refused whole). */
  readonly limit: number;
  read(text: string, start: number): PyValue | null;
  end(): number;
}

class Scanner {
  private depth = 0;
  /** Position after the last value scanned (kept in a field: no tuple per value). */
  pos = 0;
  constructor(
    private readonly s: string,
    private readonly lists: ListElementReader | null = null,
  ) {}

  skipWs(i: number): number {
    const s = this.s;
    while (i < s.length && isWs(s.charCodeAt(i))) i++;
    return i;
  }

  /** Scan one value at i; sets this.pos past it. Throws StopIteration(pos) where Python's scan_once would. */
  scanOnce(i: number): PyValue {
    const s = this.s;
    if (i >= s.length) throw new StopIteration(i);
    const c = s.charCodeAt(i);
    switch (c) {
      case 0x22: // "
        return this.scanString(i + 1);
      case 0x7b: // {
        return this.nested(() => this.parseObject(i + 1));
      case 0x5b: // [
        return this.nested(() => this.parseArray(i + 1));
      case 0x6e: // n
        if (s.startsWith("null", i)) return this.at(i + 4, null);
        break;
      case 0x74: // t
        if (s.startsWith("true", i)) return this.at(i + 4, true);
        break;
      case 0x66: // f
        if (s.startsWith("false", i)) return this.at(i + 5, false);
        break;
      case 0x4e: // N
        if (s.startsWith("NaN", i)) return this.at(i + 3, new PyFloat(NaN));
        break;
      case 0x49: // I
        if (s.startsWith("Infinity", i)) return this.at(i + 8, new PyFloat(Infinity));
        break;
      case 0x2d: // -
        if (s.startsWith("-Infinity", i)) return this.at(i + 9, new PyFloat(-Infinity));
        break;
    }
    return this.matchNumber(i);
  }

  private at<T extends PyValue>(end: number, value: T): T {
    this.pos = end;
    return value;
  }

  private nested<T>(parse: () => T): T {
    if (++this.depth > MAX_DEPTH) throw new PyRecursionError("maximum recursion depth exceeded while decoding a JSON array from a unicode string");
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  private matchNumber(start: number): PyValue {
    const s = this.s;
    const lexed = lexNumber(s, start);
    if (lexed < 0) throw new StopIteration(start);
    const i = lexed >> 1;
    const isFloat = (lexed & 1) === 1;
    this.pos = i;
    const lexeme = s.slice(start, i);
    if (isFloat) return new PyFloat(Number(lexeme));
    const digits = lexeme.length - (lexeme.charCodeAt(0) === 0x2d ? 1 : 0);
    if (digits > INT_MAX_STR_DIGITS) {
      throw new PyValueError(
        `Exceeds the limit (${INT_MAX_STR_DIGITS} digits) for integer string conversion: value has ${digits} digits; use sys.set_int_max_str_digits() to increase the limit`,
      );
    }
    if (digits <= 15) {
      const n = Number(lexeme);
      return n === 0 ? 0 : n; // "-0" is the int 0
    }
    const big = BigInt(lexeme);
    return big >= -9007199254740991n && big <= 9007199254740991n ? Number(big) : big;
  }

  private scanString(end: number): string {
    const s = this.s;
    const begin = end - 1;
    let out = "";
    let i = end;
    for (;;) {
      let j = i;
      let c = 0;
      while (j < s.length) {
        c = s.charCodeAt(j);
        if (c === 0x22 || c === 0x5c) break;
        if (c <= 0x1f) throw new PyJsonDecodeError("Invalid control character at", s, j);
        j++;
      }
      if (j >= s.length) throw new PyJsonDecodeError("Unterminated string starting at", s, begin);
      if (c === 0x22) {
        this.pos = j + 1;
        return i === end ? s.slice(i, j) : out + s.slice(i, j);
      }
      out += s.slice(i, j);
      // backslash
      j++;
      if (j === s.length) throw new PyJsonDecodeError("Unterminated string starting at", s, begin);
      const esc = s.charCodeAt(j);
      if (esc !== 0x75) {
        const mapped = SIMPLE_ESCAPES[esc];
        if (mapped === undefined) throw new PyJsonDecodeError("Invalid \\escape", s, j - 1);
        out += mapped;
        i = j + 1;
        continue;
      }
      j++;
      let endHex = j + 4;
      if (endHex >= s.length) throw new PyJsonDecodeError("Invalid \\uXXXX escape", s, j - 1);
      let cp = parseHex4(s, j);
      if (cp < 0) throw new PyJsonDecodeError("Invalid \\uXXXX escape", s, endHex - 5);
      j = endHex;
      if (cp >= 0xd800 && cp <= 0xdbff && endHex + 6 < s.length && s.charCodeAt(j) === 0x5c && s.charCodeAt(j + 1) === 0x75) {
        const lowStart = j + 2;
        endHex += 6;
        const low = parseHex4(s, lowStart);
        if (low < 0) throw new PyJsonDecodeError("Invalid \\uXXXX escape", s, endHex - 5);
        if (low >= 0xdc00 && low <= 0xdfff) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          j = endHex;
        } else {
          endHex -= 6;
        }
      }
      out += String.fromCodePoint(cp);
      i = endHex;
    }
  }

  private parseObject(start: number): PyObject {
    const s = this.s;
    const obj: PyObject = {};
    let i = this.skipWs(start);
    if (s.charCodeAt(i) === 0x7d) return this.at(i + 1, obj);
    for (;;) {
      if (s.charCodeAt(i) !== 0x22) {
        throw new PyJsonDecodeError("Expecting property name enclosed in double quotes", s, i);
      }
      const key = this.scanString(i + 1);
      i = this.skipWs(this.pos);
      if (s.charCodeAt(i) !== 0x3a) throw new PyJsonDecodeError("Expecting ':' delimiter", s, i);
      i = this.skipWs(i + 1);
      const value = this.lists !== null && this.depth === 1 && key === this.lists.key && s.charCodeAt(i) === 0x5b
        ? this.nested(() => this.parseArrayWith(i + 1, this.lists!))
        : this.valueAt(i);
      // Plain assignment keeps the first position and the last value, like a dict.
      if (key === "__proto__") Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
      else obj[key] = value;
      i = this.skipWs(this.pos);
      const c = s.charCodeAt(i);
      if (c === 0x7d) return this.at(i + 1, obj);
      if (c !== 0x2c) throw new PyJsonDecodeError("Expecting ',' delimiter", s, i);
      i = this.skipWs(i + 1);
    }
  }

  private parseArray(start: number): PyValue[] {
    const s = this.s;
    const arr: PyValue[] = [];
    let i = this.skipWs(start);
    if (s.charCodeAt(i) === 0x5d) return this.at(i + 1, arr);
    for (;;) {
      arr.push(this.valueAt(i));
      i = this.skipWs(this.pos);
      const c = s.charCodeAt(i);
      if (c === 0x5d) return this.at(i + 1, arr);
      if (c !== 0x2c) throw new PyJsonDecodeError("Expecting ',' delimiter", s, i);
      i = this.skipWs(i + 1);
    }
  }

  /** parseArray, offering each object element to the reader first. */
  private parseArrayWith(start: number, reader: ListElementReader): PyValue[] {
    const s = this.s;
    const arr: PyValue[] = [];
    let i = this.skipWs(start);
    if (s.charCodeAt(i) === 0x5d) return this.at(i + 1, arr);
    let read = 0;
    let declined = 0;
    for (;;) {
      // A list the reader mostly declines is not its kind of input: stop paying for its attempts.
      const offer = s.charCodeAt(i) === 0x7b && arr.length < reader.limit && declined <= 8 + read;
      const fast = offer ? reader.read(s, i) : null;
      if (fast !== null) {
        read++;
        arr.push(fast);
        this.pos = reader.end();
      } else {
        if (offer) declined++;
        arr.push(this.valueAt(i));
      }
      i = this.skipWs(this.pos);
      const c = s.charCodeAt(i);
      if (c === 0x5d) return this.at(i + 1, arr);
      if (c !== 0x2c) throw new PyJsonDecodeError("Expecting ',' delimiter", s, i);
      i = this.skipWs(i + 1);
    }
  }

  private valueAt(i: number): PyValue {
    try {
      return this.scanOnce(i);
    } catch (err) {
      if (err instanceof StopIteration) throw new PyJsonDecodeError("Expecting value", this.s, err.pos);
      throw err;
    }
  }
}

/** A Python `ValueError` that is not a JSONDecodeError (e.g. the int digit limit). */
export class PyValueError extends Error {
  override name = "ValueError";
}

const SIMPLE_ESCAPES: Record<number, string> = {
  0x22: '"',
  0x5c: "\\",
  0x2f: "/",
  0x62: "\b",
  0x66: "\f",
  0x6e: "\n",
  0x72: "\r",
  0x74: "\t",
};

function parseHex4(s: string, at: number): number {
  let v = 0;
  for (let k = 0; k < 4; k++) {
    const c = s.charCodeAt(at + k);
    let d: number;
    if (c >= 0x30 && c <= 0x39) d = c - 0x30;
    else if (c >= 0x61 && c <= 0x66) d = c - 0x57;
    else if (c >= 0x41 && c <= 0x46) d = c - 0x37;
    else return -1;
    v = (v << 4) | d;
  }
  return v;
}

/** `json.loads(text)`; throws PyJsonDecodeError or PyValueError like Python. */
export function parsePyJson(text: string): PyValue {
  return parsePyJsonWith(text, null);
}

/**
 * `json.loads(text)`, where the elements of one top-level list may come from
 * `lists.read` (values only its caller understands) instead of the scanner.
 * Accepts and refuses exactly the texts parsePyJson does, with the same errors.
 */
export function parsePyJsonWith(text: string, lists: ListElementReader | null): PyValue {
  if (text.charCodeAt(0) === 0xfeff) {
    throw new PyJsonDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0);
  }
  const scanner = new Scanner(text, lists);
  const start = scanner.skipWs(0);
  let value: PyValue;
  try {
    value = scanner.scanOnce(start);
  } catch (err) {
    if (err instanceof StopIteration) throw new PyJsonDecodeError("Expecting value", text, err.pos);
    throw err;
  }
  const end = scanner.skipWs(scanner.pos);
  if (end !== text.length) throw new PyJsonDecodeError("Extra data", text, end);
  return value;
}
