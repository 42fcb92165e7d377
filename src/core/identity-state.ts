/**
 * The state a projection is a pure function of: for every observation id,
 * each distinct fingerprint with its delivery count and earliest delivery.
 * Folding a delivery into it is order-independent, which is what makes the
 * projection independent of delivery order and safe to rebuild.
 */
import { observationFingerprint, type Observation } from "./observation.js";
import { compareOrder } from "./ordering.js";

export interface FingerprintState {
  /** Earliest delivery with this fingerprint, by the reference's order key. */
  representative: Observation;
  count: number;
}

export interface IdentityState {
  byId: Map<string, Map<string, FingerprintState>>;
  deliveries: number;
}

export function emptyIdentityState(): IdentityState {
  return { byId: new Map(), deliveries: 0 };
}

/** What a delivery was to its identity: a new id, a repeat of a known payload, or a changed payload (a conflict). */
export type DeliveryKind = "new" | "duplicate" | "conflict";

export function foldDelivery(state: IdentityState, obs: Observation, fingerprint = observationFingerprint(obs)): DeliveryKind {
  state.deliveries++;
  let versions = state.byId.get(obs.observation_id);
  if (versions === undefined) {
    versions = new Map();
    state.byId.set(obs.observation_id, versions);
  }
  const prior = versions.get(fingerprint);
  if (prior === undefined) {
    versions.set(fingerprint, { representative: obs, count: 1 });
    return versions.size === 1 ? "new" : "conflict";
  }
  prior.count++;
  if (compareOrder(obs, prior.representative) < 0) prior.representative = obs;
  return "duplicate";
}
