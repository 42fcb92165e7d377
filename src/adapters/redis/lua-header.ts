/**
 * The facts the identity library (mufold_v1.lua) shares with the TypeScript,
 * written into it when it is read: the part order of an identity's keys, the
 * meta field names, the projection bounds and the token table of the stored
 * form. The .lua file holds a marker line where this header goes; the code
 * loaded into Redis (and compared by `assertFunctionsLoaded`) is the file with
 * the header in place, so the Lua never restates a number or a name by hand.
 */
import { EXPANSION } from "../../core/compact-json.js";
import { SKELETON_SEPARATOR } from "../../core/packet-parts.js";
import { MAX_PROJECTION_HISTORY, MAX_PROJECTION_REJECTIONS } from "../../core/projection-limits.js";
import { IDENTITY_PARTS, META_FIELDS } from "../../fold/stored-names.js";

/** The line in a .lua file that the header replaces. */
export const HEADER_MARKER = "-- @mufold:generated-header";

/** A Lua string literal for any text: printable ASCII as is, the rest as decimal escapes. */
export function luaString(text: string): string {
  let out = "'";
  for (const byte of Buffer.from(text, "utf8")) {
    if (byte === 0x27 || byte === 0x5c) out += "\\" + String.fromCharCode(byte);
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte);
    else out += "\\" + String(byte).padStart(3, "0");
  }
  return out + "'";
}

export function luaHeader(): string {
  // The first line still names src/fold/keys.ts (now src/fold/stored-names.ts): the loaded code stays byte for
  // byte the previous build's, which folds already running compare with theirs.
  const lines = [
    "-- Generated from src/fold/keys.ts, src/core/projection-limits.ts, src/core/packet-parts.ts and",
    "-- src/core/compact-json.ts by src/adapters/redis/lua-header.ts when the library is loaded.",
    `local PART = { ${IDENTITY_PARTS.map((p, i) => `${p} = ${i + 1}`).join(", ")} }`,
    `local IDENTITY_KEYS = ${IDENTITY_PARTS.length}`,
    `local META = { ${Object.entries(META_FIELDS).map(([k, v]) => `${k} = ${luaString(v)}`).join(", ")} }`,
    `local MAX_HISTORY = ${MAX_PROJECTION_HISTORY}`,
    `local MAX_REJECTIONS = ${MAX_PROJECTION_REJECTIONS}`,
    `local SEP = ${luaString(SKELETON_SEPARATOR)}`,
    "local EXPANSION = {",
    ...[...EXPANSION].map(([token, text]) => `  [${luaString(token)}] = ${luaString(text)},`),
    "}",
  ];
  return lines.join("\n");
}

/** A library's loaded code: its file with the header in place of the marker (a file without the marker is used as is). */
export function withHeader(source: string): string {
  const at = source.indexOf(`\n${HEADER_MARKER}\n`);
  if (at < 0) return source;
  return source.slice(0, at + 1) + luaHeader() + source.slice(at + 1 + HEADER_MARKER.length);
}
