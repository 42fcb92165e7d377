/**
 * The state a projection is a pure function of: for every observation id,
 * each distinct fingerprint with its delivery count and earliest delivery.
 * Folding a delivery into it is order-independent, which is what makes the
 * projection independent of delivery order and safe to rebuild.
 */
import { observationFingerprint, type Observation } from "./observation.js";
import { compareOrder } from "./ordering.js";

export interface FingerprintState {
  fingerprint: string;
  /** Earliest delivery with this fingerprint, by the reference's order key. */
  representative: Observation;
  count: number;
}

export interface IdentityState {
  /**
   * Every id's versions, one per distinct fingerprint, in the order they were
   * first delivered. A list, not a map: almost every id has one version, and a
   * one-entry Map costs several times a one-element array's heap (a worker
   * caches one per accepted observation).
   */
  byId: Map<string, FingerprintState[]>;
  deliveries: number;
}

export function emptyIdentityState(): IdentityState {
  return { byId: new Map(), deliveries: 0 };
}

/** The version of `versions` with this fingerprint, if any. */
export function versionOf<V extends FingerprintState>(versions: readonly V[], fingerprint: string): V | undefined {
  for (const v of versions) if (v.fingerprint === fingerprint) return v;
  return undefined;
}

/** Deliveries of one id, over all its versions. */
export function deliveriesOf(versions: readonly FingerprintState[]): number {
  let n = 0;
  for (const v of versions) n += v.count;
  return n;
}

/** What a delivery was to its identity: a new id, a repeat of a known payload, or a changed payload (a conflict). */
export type DeliveryKind = "new" | "duplicate" | "conflict";

export function foldDelivery(state: IdentityState, obs: Observation, fingerprint = observationFingerprint(obs)): DeliveryKind {
  state.deliveries++;
  const versions = state.byId.get(obs.observation_id);
  if (versions === undefined) {
    state.byId.set(obs.observation_id, [{ fingerprint, representative: obs, count: 1 }]);
    return "new";
  }
  const prior = versionOf(versions, fingerprint);
  if (prior === undefined) {
    versions.push({ fingerprint, representative: obs, count: 1 });
    return "conflict";
  }
  prior.count++;
  if (compareOrder(obs, prior.representative) < 0) prior.representative = obs;
  return "duplicate";
}
