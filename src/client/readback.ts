/**
 * Reading projections back, for Node callers: find the current generation,
 * compute an identity from scope + snapshot refs, and fetch the packet bytes
 * with one Redis call. The optional validator runs the fail-closed readback
 * check before a packet is trusted.
 */
import type { Cluster, Redis } from "ioredis";
import { normalizeContext, parsePyJson, reducerIdentity, validateProjection, DEFAULT_REDUCER_VERSION, type PyObject } from "../core/index.js";
import { RedisStore } from "../adapters/redis/store.js";
import { MufoldError } from "../errors.js";

export interface ScopeRef {
  scope: { agent_id: string; project_id: string; corpus_id: string; surface_id: string };
  retrieval_snapshot_ref: string;
  policy_snapshot_ref: string;
  reducer_version?: string;
}

/** The identity a consumer computes itself from what it knows. */
export function identityOf(ref: ScopeRef): string {
  return reducerIdentity(
    normalizeContext({
      scope: { ...ref.scope },
      retrieval_snapshot_ref: ref.retrieval_snapshot_ref,
      policy_snapshot_ref: ref.policy_snapshot_ref,
      reducer_version: ref.reducer_version ?? DEFAULT_REDUCER_VERSION,
    }),
  );
}

export class ProjectionReader {
  readonly store: RedisStore;
  constructor(redis: Redis | Cluster, prefix = "mufold") {
    this.store = new RedisStore(redis, prefix);
  }

  async generation(): Promise<number> {
    const generation = await this.store.liveGeneration();
    if (generation === null) throw new MufoldError("no mufold generation in Redis: nothing has been folded, or the state was lost (run `mufold replay --promote`)");
    return generation;
  }

  /** The packet's canonical JSON bytes, or null for an unknown identity. */
  async read(identity: string, generation?: number): Promise<string | null> {
    return this.store.read(generation ?? (await this.generation()), identity);
  }

  async readByScope(ref: ScopeRef): Promise<string | null> {
    return this.read(identityOf(ref));
  }

  /** Read and run the readback validator; throws ContractError if the packet is not valid. */
  async readValidated(identity: string): Promise<PyObject | null> {
    const text = await this.read(identity);
    return text === null ? null : validateProjection(parsePyJson(text));
  }

  async identities(generation?: number): Promise<string[]> {
    return this.store.listIdentities(generation ?? (await this.generation()));
  }
}
