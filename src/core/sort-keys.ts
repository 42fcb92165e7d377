/**
 * Members of Redis sorted sets whose byte order (ZRANGE over equal scores)
 * is the packet's order, so the read function never sorts.
 *
 * History: the reference's order key (UTC instant, raw created_at, id).
 * Subjects: Python tuple order of (level, digests | (subject_id,)).
 * The id always follows the last NUL, where the read function finds it.
 */
import { AsciiText } from "./ascii-text.js";
import { utcMicros } from "./iso-timestamp.js";
import { utcSecondsOfCreated } from "./ordering.js";

const INSTANT_BIAS = 10_000_000; // offsets reach back less than a day before 0001-01-01

/**
 * Order-preserving escape that frees NUL to act as a separator (created_at may contain NUL). A text without NUL or
 * \x01 is itself (checked first: the replace made garbage even when it replaced nothing, ~0.1 KB a history member).
 */
function escapeNul(s: string): string {
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) < 2) return s.replace(/[\u0000\u0001]/g, (c) => (c === "\u0000" ? "\u0001\u0001" : "\u0001\u0002"));
  }
  return s;
}

export function historyMember(createdAt: string, observationId: string): string {
  const seconds = utcSecondsOfCreated(createdAt);
  const micros = utcMicros();
  // One flat string from a buffer (ascii-text.ts); a created_at that is not ASCII is concatenated instead.
  const ascii = memberText.start().digits(seconds + INSTANT_BIAS, 13).digits(micros, 6).put(escapeNul(createdAt)).put("\u0000").put(observationId).text();
  if (ascii !== null) return ascii;
  const instant = String(seconds + INSTANT_BIAS).padStart(13, "0") + String(micros).padStart(6, "0");
  return instant + escapeNul(createdAt) + "\u0000" + observationId;
}

const memberText = new AsciiText();

/** The id after a member's last NUL (the read function's `id_of`), or undefined when it holds none. */
export function idOfMember(member: string): string | undefined {
  const at = member.lastIndexOf("\u0000");
  return at < 0 ? undefined : member.slice(at + 1);
}

/** Elements end with \x01, below every character a digest or id can hold, so shorter tuples sort first. */
export function subjectMember(level: string, key: readonly string[], subjectId: string): string {
  // One flat string from a buffer: the pieces joined were a list, a string per element and their concatenation,
  // flattened once more to be kept (~0.3 KB a new subject).
  const t = memberText.start().put(level).put("\u0000");
  for (let i = 0; i < key.length; i++) t.put(key[i]!).put("\u0001");
  return t.put("\u0000").put(subjectId).text() ?? level + "\u0000" + key.map((k) => k + "\u0001").join("") + "\u0000" + subjectId;
}
