/**
 * CPython 3.11 `datetime.fromisoformat`, ported from its C implementation
 * (the one CPython runs), including its quirks: it reads UTF-8 bytes with a
 * NUL terminator, accepts any one character as the date/time separator,
 * ISO week dates, basic and extended forms, fractions after `.` or `,` with
 * digits past six truncated, and offsets with seconds and microseconds.
 * JavaScript's Date is neither this grammar nor microsecond-precise.
 */

export interface IsoDateTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  microsecond: number;
  /** UTC offset in microseconds, or null for a naive datetime. */
  offsetMicros: number | null;
}

const encoder = new TextEncoder();

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Reader over the UTF-8 bytes with C's NUL terminator past the end. */
interface Bytes {
  readonly length: number;
  at(i: number): number;
}

class Utf8Bytes implements Bytes {
  readonly length: number;
  constructor(private readonly b: Uint8Array) {
    this.length = b.length;
  }
  at(i: number): number {
    return i < this.b.length ? this.b[i]! : 0;
  }
}

/** ASCII text is its own UTF-8: read it without encoding. */
class AsciiBytes implements Bytes {
  readonly length: number;
  constructor(private readonly s: string) {
    this.length = s.length;
  }
  at(i: number): number {
    return i < this.s.length ? this.s.charCodeAt(i) : 0;
  }
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** parse_digits: returns the new position, or -1 (C's NULL). */
function parseDigits(s: Bytes, p: number, n: number, out: { v: number }): number {
  for (let i = 0; i < n; i++) {
    const d = s.at(p++) - 0x30;
    if (d < 0 || d > 9) return -1;
    out.v = out.v * 10 + d;
  }
  return p;
}

function isLeap(y: number): boolean {
  return y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
}

const DAYS_BEFORE_MONTH = [0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(y: number, m: number): number {
  return m === 2 && isLeap(y) ? 29 : DAYS_IN_MONTH[m]!;
}

/** Proleptic Gregorian ordinal, 0001-01-01 is day 1. */
export function ymdToOrdinal(y: number, m: number, d: number): number {
  const py = y - 1;
  const before = py * 365 + Math.floor(py / 4) - Math.floor(py / 100) + Math.floor(py / 400);
  return before + DAYS_BEFORE_MONTH[m]! + (m > 2 && isLeap(y) ? 1 : 0) + d;
}

function ordinalToYmd(ordinal: number): [number, number, number] {
  let n = ordinal - 1;
  const n400 = Math.floor(n / 146097);
  n -= n400 * 146097;
  const n100 = Math.floor(n / 36524);
  n -= n100 * 36524;
  const n4 = Math.floor(n / 1461);
  n -= n4 * 1461;
  const n1 = Math.floor(n / 365);
  n -= n1 * 365;
  const year = n400 * 400 + 1 + n100 * 100 + n4 * 4 + n1;
  if (n1 === 4 || n100 === 4) return [year - 1, 12, 31];
  const leap = n1 === 3 && (n4 !== 24 || n100 === 3);
  let month = (n + 50) >> 5;
  let preceding = DAYS_BEFORE_MONTH[month]! + (month > 2 && leap ? 1 : 0);
  if (preceding > n) {
    month -= 1;
    preceding -= DAYS_IN_MONTH[month]! + (month === 2 && leap ? 1 : 0);
  }
  n -= preceding;
  return [year, month, n + 1];
}

function isoWeek1Monday(year: number): number {
  const firstDay = ymdToOrdinal(year, 1, 1);
  const firstWeekday = (firstDay + 6) % 7;
  let week1Monday = firstDay - firstWeekday;
  if (firstWeekday > 3) week1Monday += 7;
  return week1Monday;
}

function isoToYmd(isoYear: number, week: number, day: number): [number, number, number] | null {
  if (isoYear < 1 || isoYear > 9999) return null;
  if (week <= 0 || week >= 53) {
    let outOfRange = true;
    if (week === 53) {
      const firstWeekday = ymdToOrdinal(isoYear, 1, 1) % 7;
      if (firstWeekday === 4 || (firstWeekday === 3 && isLeap(isoYear))) outOfRange = false;
    }
    if (outOfRange) return null;
  }
  if (day <= 0 || day >= 8) return null;
  const day1 = isoWeek1Monday(isoYear);
  return ordinalToYmd(day1 + (week - 1) * 7 + day - 1);
}

function findSeparator(s: Bytes, len: number): number {
  if (len === 7) return 7;
  if (s.at(4) === 0x2d) {
    if (s.at(5) === 0x57) {
      if (len < 8) return -1;
      if (len > 8 && s.at(8) === 0x2d) {
        if (len === 9) return -1;
        if (len > 10 && isDigit(s.at(10))) return 8;
        return 10;
      }
      return 8;
    }
    return 10;
  }
  if (s.at(4) === 0x57) {
    let idx = 7;
    for (; idx < len; idx++) if (!isDigit(s.at(idx))) break;
    if (idx < 9) return idx;
    return idx % 2 === 0 ? 7 : 8;
  }
  return 8;
}

function parseDate(s: Bytes, len: number, out: IsoDateTime): boolean {
  const year = { v: 0 };
  let p = parseDigits(s, 0, 4, year);
  if (p < 0) return false;
  const usesSep = s.at(p) === 0x2d;
  if (usesSep) p++;
  if (s.at(p) === 0x57) {
    p++;
    const week = { v: 0 };
    const day = { v: 0 };
    p = parseDigits(s, p, 2, week);
    if (p < 0) return false;
    if (p < len) {
      if (usesSep && s.at(p++) !== 0x2d) return false;
      p = parseDigits(s, p, 1, day);
      if (p < 0) return false;
    } else {
      day.v = 1;
    }
    const ymd = isoToYmd(year.v, week.v, day.v);
    if (ymd === null) return false;
    [out.year, out.month, out.day] = ymd;
    return true;
  }
  const month = { v: 0 };
  const day = { v: 0 };
  p = parseDigits(s, p, 2, month);
  if (p < 0) return false;
  if (usesSep && s.at(p++) !== 0x2d) return false;
  p = parseDigits(s, p, 2, day);
  if (p < 0) return false;
  out.year = year.v;
  out.month = month.v;
  out.day = day.v;
  return true;
}

const CORRECTION = [100000, 10000, 1000, 100, 10];

/** parse_hh_mm_ss_ff: returns <0 on error, 1 if not at the terminator, else 0. */
function parseHhMmSsFf(s: Bytes, start: number, end: number, vals: number[]): number {
  vals[0] = vals[1] = vals[2] = vals[3] = 0;
  let p = start;
  let hasSep = true;
  for (let i = 0; i < 3; i++) {
    const v = { v: 0 };
    p = parseDigits(s, p, 2, v);
    if (p < 0) return -3;
    vals[i] = v.v;
    const c = s.at(p++);
    if (i === 0) hasSep = c === 0x3a;
    if (p >= end) return c !== 0 ? 1 : 0;
    if (hasSep && c === 0x3a) continue;
    if (c === 0x2e || c === 0x2c) break;
    if (!hasSep) p--;
    else return -4;
  }
  const remains = end - p;
  const toParse = remains >= 6 ? 6 : remains;
  const us = { v: 0 };
  p = parseDigits(s, p, toParse, us);
  if (p < 0) return -3;
  // toParse is never 0 here: an empty fraction already returned above.
  vals[3] = toParse < 6 ? us.v * CORRECTION[toParse - 1]! : us.v;
  while (isDigit(s.at(p))) p++;
  return s.at(p) !== 0 ? 1 : 0;
}

/** Returns false when invalid; fills time fields and the offset. */
function parseTime(s: Bytes, start: number, len: number, out: IsoDateTime): boolean {
  const end = start + len;
  let tz = start;
  do {
    const c = s.at(tz);
    if (c === 0x5a || c === 0x2b || c === 0x2d) break;
  } while (++tz < end);
  const vals = [0, 0, 0, 0];
  const rv = parseHhMmSsFf(s, start, tz, vals);
  if (rv < 0) return false;
  [out.hour, out.minute, out.second, out.microsecond] = vals as [number, number, number, number];
  if (tz === end) return rv !== 1;
  if (s.at(tz) === 0x5a) {
    out.offsetMicros = 0;
    return s.at(tz + 1) === 0;
  }
  const sign = s.at(tz) === 0x2d ? -1 : 1;
  const tzv = [0, 0, 0, 0];
  const rv2 = parseHhMmSsFf(s, tz + 1, end, tzv);
  if (rv2 !== 0) return false;
  const seconds = tzv[0]! * 3600 + tzv[1]! * 60 + tzv[2]!;
  // CPython makes any offset whose whole seconds are 0 UTC, dropping its fraction.
  const offset = seconds === 0 ? 0 : sign * (seconds * 1_000_000 + tzv[3]!);
  // datetime.timezone requires strictly less than 24 hours.
  if (Math.abs(offset) >= 86_400_000_000) return false;
  out.offsetMicros = offset;
  return true;
}

function sanitize(text: string): string | null {
  // Code-point length and positions, as CPython counts them.
  const cps = Array.from(text);
  if (cps.length < 7) return null;
  if (!LONE_SURROGATE.test(text)) return text;
  for (const pos of [7, 8, 10]) {
    if (pos > cps.length) break;
    const ch = cps[pos];
    if (ch !== undefined && ch.length === 1 && LONE_SURROGATE.test(ch)) {
      cps[pos] = "T";
      break;
    }
  }
  const cleaned = cps.join("");
  return LONE_SURROGATE.test(cleaned) ? null : cleaned;
}

/**
 * The shape nearly every timestamp has: `YYYY-MM-DD`, `T` or space,
 * `HH:MM:SS`, optionally `.` and 1 to 6 digits, optionally `Z` or `±HH:MM`.
 * For these the C parser's steps come down to the arithmetic below; anything
 * else takes the full port. Reads char codes (no match object per timestamp).
 */
export function commonIsoFormat(text: string): IsoDateTime | null | undefined {
  const read = scanCommon(text);
  if (read !== 1) return read === 0 ? null : undefined;
  const c = common;
  return { year: c.year, month: c.month, day: c.day, hour: c.hour, minute: c.minute, second: c.second, microsecond: c.microsecond, offsetMicros: c.offsetMicros };
}

/**
 * The UTC seconds of a common-shape timestamp with an offset, its microseconds
 * then in `utcMicros()`; NaN for any other text (the caller takes the full
 * parser). No object is made: the fold orders observations by this on every
 * comparison.
 */
export function commonUtcSeconds(text: string): number {
  if (scanCommon(text) !== 1 || common.offsetMicros === null) return NaN;
  return utcSecondsOf(common);
}

/** The fields scanCommon read last (read them before its next call). */
const common: IsoDateTime = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0, microsecond: 0, offsetMicros: null };

/** Read `text` into `common`: 1 for the common shape naming a moment, 0 for the shape naming none (CPython raises), -1 for another shape. */
function scanCommon(text: string): number {
  const n = text.length;
  if (n < 19 || text.charCodeAt(4) !== 0x2d || text.charCodeAt(7) !== 0x2d || text.charCodeAt(13) !== 0x3a || text.charCodeAt(16) !== 0x3a) return -1;
  const sep = text.charCodeAt(10);
  if (sep !== 0x54 && sep !== 0x20) return -1;
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const hour = digitsAt(text, 11, 2);
  const minute = digitsAt(text, 14, 2);
  const second = digitsAt(text, 17, 2);
  if ((year | month | day | hour | minute | second) < 0) return -1;
  let p = 19;
  let microsecond = 0;
  if (text.charCodeAt(p) === 0x2e) {
    let digits = 0;
    while (digits < 7 && isDigit(text.charCodeAt(p + 1 + digits))) digits++;
    if (digits === 0 || digits > 6) return -1;
    microsecond = digitsAt(text, p + 1, digits) * (digits < 6 ? CORRECTION[digits - 1]! : 1);
    p += 1 + digits;
  }
  let offsetMicros: number | null = null;
  const tz = text.charCodeAt(p);
  if (tz === 0x5a && p + 1 === n) offsetMicros = 0;
  else if ((tz === 0x2b || tz === 0x2d) && p + 6 === n && text.charCodeAt(p + 3) === 0x3a) {
    const hh = digitsAt(text, p + 1, 2);
    const mm = digitsAt(text, p + 4, 2);
    if ((hh | mm) < 0) return -1;
    const seconds = hh * 3600 + mm * 60;
    offsetMicros = seconds === 0 ? 0 : (tz === 0x2d ? -1 : 1) * seconds * 1_000_000;
    if (Math.abs(offsetMicros) >= 86_400_000_000) return 0; // datetime.timezone: strictly less than a day
  } else if (p !== n) return -1;
  const c = common;
  c.year = year;
  c.month = month;
  c.day = day;
  c.hour = hour;
  c.minute = minute;
  c.second = second;
  c.microsecond = microsecond;
  c.offsetMicros = offsetMicros;
  return inRange(c) ? 1 : 0;
}

/** The decimal value of `count` ASCII digits at `at`, or -1 if one is not a digit. */
function digitsAt(text: string, at: number, count: number): number {
  let v = 0;
  for (let i = at; i < at + count; i++) {
    const d = text.charCodeAt(i) - 0x30;
    if (!(d >= 0 && d <= 9)) return -1;
    v = v * 10 + d;
  }
  return v;
}

/** The date and time fields name a real moment (CPython's final checks). */
function inRange(out: IsoDateTime): boolean {
  if (out.year < 1 || out.year > 9999 || out.month < 1 || out.month > 12) return false;
  if (out.day < 1 || out.day > daysInMonth(out.year, out.month)) return false;
  return !(out.hour > 23 || out.minute > 59 || out.second > 59);
}

/** `datetime.fromisoformat(text)`, or null where CPython raises ValueError. */
export function pyFromIsoFormat(text: string): IsoDateTime | null {
  const common = commonIsoFormat(text);
  return common !== undefined ? common : fullFromIsoFormat(text);
}

/** The full port of CPython's parser. */
export function fullFromIsoFormat(text: string): IsoDateTime | null {
  const ascii = isAscii(text);
  const clean = ascii ? (text.length < 7 ? null : text) : sanitize(text);
  if (clean === null) return null;
  const b: Bytes = ascii ? new AsciiBytes(clean) : new Utf8Bytes(encoder.encode(clean));
  const len = b.length;
  const sepAt = findSeparator(b, len);
  const out: IsoDateTime = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0, microsecond: 0, offsetMicros: null };
  if (!parseDate(b, sepAt, out)) return null;
  if (len > sepAt) {
    let p = sepAt;
    const lead = b.at(p);
    if ((lead & 0x80) === 0) p += 1;
    else if ((lead & 0xf0) === 0xe0) p += 3;
    else if ((lead & 0xf0) === 0xf0) p += 4;
    else p += 2;
    if (!parseTime(b, p, len - p, out)) return null;
  }
  return inRange(out) ? out : null;
}

/** ASCII needs no code-point or surrogate handling (the common case). */
function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** A UTC instant as (seconds since 0001-01-01, microseconds), comparable across offsets. */
export interface Instant {
  seconds: number;
  micros: number;
}

export function utcInstant(dt: IsoDateTime): Instant {
  const seconds = utcSecondsOf(dt);
  return { seconds, micros: lastMicros };
}

let lastMicros = 0;

/** The microseconds of the instant utcSecondsOf or commonUtcSeconds last gave the seconds of. */
export function utcMicros(): number {
  return lastMicros;
}

function utcSecondsOf(dt: IsoDateTime): number {
  const days = ymdToOrdinal(dt.year, dt.month, dt.day);
  const seconds = days * 86400 + dt.hour * 3600 + dt.minute * 60 + dt.second;
  const micros = dt.microsecond - (dt.offsetMicros ?? 0);
  const carry = Math.floor(micros / 1_000_000);
  lastMicros = micros - carry * 1_000_000;
  return seconds + carry;
}

export function compareInstants(a: Instant, b: Instant): number {
  return a.seconds !== b.seconds ? a.seconds - b.seconds : a.micros - b.micros;
}
