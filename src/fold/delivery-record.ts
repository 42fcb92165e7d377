/**
 * How one observation id's deliveries are stored (`d` part): every distinct
 * fingerprint with its count and earliest delivery. This is the identity state
 * the packet is a function of; a worker rebuilds its cache from it.
 */
import type { FingerprintState } from "../core/identity-state.js";
import { validateObservation } from "../core/observation.js";
import { observationJson } from "../core/observation-json.js";
import { parsePyJson } from "../core/pyjson-parse.js";
import type { PyValue } from "../core/pyvalue.js";

/** `[[fingerprint, count, observation], …]` as canonical JSON (written directly: this runs per delivery). */
export function encodeDeliveryRecord(versions: Map<string, FingerprintState>): string {
  let out = "[";
  for (const [fp, v] of versions) out += (out.length > 1 ? "," : "") + `[${JSON.stringify(fp)},${v.count},${observationJson(v.representative)}]`;
  return out + "]";
}

export function decodeDeliveryRecord(text: string): Map<string, FingerprintState> {
  const rows = parsePyJson(text) as [string, number, PyValue][];
  const versions = new Map<string, FingerprintState>();
  for (const [fp, count, obs] of rows) versions.set(fp, { count, representative: validateObservation(obs) });
  return versions;
}
