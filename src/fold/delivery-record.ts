/**
 * How one observation id's deliveries are stored. The identity state is, per
 * id, every distinct fingerprint with its count and earliest delivery; most
 * ids have one fingerprint delivered once, and their history entry (`h`)
 * already holds the observation and its fingerprint. So the `d` part holds
 * only what `h` does not:
 *   - nothing, for an accepted id delivered once;
 *   - its count ("3"), for an accepted id delivered more than once;
 *   - the full record `[[fingerprint, count, observation], …]`, for an id with
 *     conflicting payloads (it is not in the history).
 * A worker rebuilds its cache from `d` and `h` together. (A full record for an
 * accepted id, as mufold 0.1 wrote, still reads back.)
 */
import { expandTokens } from "../core/compact-json.js";
import type { ReducerContext } from "../core/identity.js";
import type { FingerprintState } from "../core/identity-state.js";
import { OBSERVATION_SCHEMA_VERSION, normalizedFingerprint, validateObservation, type Observation } from "../core/observation.js";
import { observationJson } from "../core/observation-json.js";
import { parsePyJson } from "../core/pyjson-parse.js";
import { isPyObject, type PyValue } from "../core/pyvalue.js";

/** `[[fingerprint, count, observation], …]` as canonical JSON (written directly: this runs per delivery). */
export function encodeDeliveryRecord(versions: readonly FingerprintState[]): string {
  let out = "[";
  for (const v of versions) out += (out.length > 1 ? "," : "") + `[${JSON.stringify(v.fingerprint)},${v.count},${observationJson(v.representative)}]`;
  return out + "]";
}

export function decodeDeliveryRecord(text: string): FingerprintState[] {
  const rows = parsePyJson(text) as [unknown, unknown, PyValue][];
  const versions: FingerprintState[] = [];
  for (const [fp, count, obs] of rows) {
    if (typeof count !== "number" || !Number.isSafeInteger(count) || count < 1) throw new Error("a stored delivery record's count is not a positive integer");
    const representative = validateObservation(obs);
    const fingerprint = storedFingerprint(fp, representative, "delivery record");
    const at = versions.findIndex((v) => v.fingerprint === fingerprint);
    if (at >= 0) versions[at] = { fingerprint, count, representative }; // as a map keyed by fingerprint read it: the last row wins
    else versions.push({ fingerprint, count, representative });
  }
  return versions;
}

/**
 * A fingerprint read back from Redis, checked against the observation it came
 * with: history entries are written without escaping (observation-json.ts), so
 * only a fingerprint mufold computed may go back into one.
 */
function storedFingerprint(fingerprint: unknown, observation: Observation, where: string): string {
  if (fingerprint !== normalizedFingerprint(observation)) throw new Error(`a stored ${where}'s fingerprint is not its observation's`);
  return fingerprint;
}

/** What `d` holds for an id (see the header); null: nothing. */
export function storedRecord(versions: readonly FingerprintState[]): string | null {
  if (versions.length > 1) return encodeDeliveryRecord(versions);
  const only = versions[0]!;
  return only.count > 1 ? String(only.count) : null;
}

/** The observation and fingerprint a stored history entry holds, completed with the identity's context. */
function fromHistory(fragment: string, context: ReducerContext): { fingerprint: string; observation: ReturnType<typeof validateObservation> } {
  const entry = parsePyJson(expandTokens(fragment));
  if (!isPyObject(entry)) throw new Error("a stored history entry is not an object");
  const { observation_fingerprint: stored, subject_id: _subject, ...fields } = entry;
  const observation = validateObservation({
    ...fields,
    schema_version: OBSERVATION_SCHEMA_VERSION,
    scope: { ...context.scope },
    retrieval_snapshot_ref: context.retrieval_snapshot_ref,
    policy_snapshot_ref: context.policy_snapshot_ref,
    grants_new_action_authority: false,
    provider_write_performed: false,
    external_writes_performed: false,
    raw_content_captured: false,
  });
  return { fingerprint: storedFingerprint(stored, observation, "history entry"), observation };
}

/** Every id's versions from the stored `d` and `h` of one identity. */
export function decodeStoredState(records: ReadonlyMap<string, string>, history: ReadonlyMap<string, string>, context: ReducerContext): Map<string, FingerprintState[]> {
  const byId = new Map<string, FingerprintState[]>();
  for (const [id, text] of records) if (text.startsWith("[")) byId.set(id, decodeDeliveryRecord(text));
  for (const [id, fragment] of history) {
    if (byId.has(id)) continue;
    const { fingerprint, observation } = fromHistory(fragment, context);
    const count = records.get(id);
    byId.set(id, [{ fingerprint, representative: observation, count: count === undefined ? 1 : Number(count) }]);
  }
  return byId;
}
