/**
 * How one observation id's deliveries are stored (`d` part): every distinct
 * fingerprint with its count and earliest delivery. This is the identity state
 * the packet is a function of; a worker rebuilds its cache from it.
 */
import { canonicalJson } from "../core/canonical-json.js";
import type { FingerprintState } from "../core/identity-state.js";
import { observationToPy, validateObservation } from "../core/observation.js";
import { parsePyJson } from "../core/pyjson-parse.js";
import type { PyValue } from "../core/pyvalue.js";

export function encodeDeliveryRecord(versions: Map<string, FingerprintState>): string {
  const rows: PyValue[] = [...versions].map(([fp, v]) => [fp, v.count, observationToPy(v.representative)]);
  return canonicalJson(rows);
}

export function decodeDeliveryRecord(text: string): Map<string, FingerprintState> {
  const rows = parsePyJson(text) as [string, number, PyValue][];
  const versions = new Map<string, FingerprintState>();
  for (const [fp, count, obs] of rows) versions.set(fp, { count, representative: validateObservation(obs) });
  return versions;
}
