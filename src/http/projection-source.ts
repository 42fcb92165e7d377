/**
 * The routes' access to the projection store: every Redis call bounded by a
 * timeout, and any failure of it turned into the 503 a client should see.
 */
import { MufoldError } from "../errors.js";
import type { Logger } from "../observability/log.js";
import type { ProjectionReader } from "../client/readback.js";
import { HttpError } from "./reply.js";

export interface ProjectionSource {
  /** The live generation, read on every request (a promoted replay is served at once); 503 when there is none. */
  generation(): Promise<number>;
  /** The stored packet of `identity` in the live generation; 404 unknown_identity when there is none. */
  packet(identity: string): Promise<string>;
  /** Every identity of generation `gen`, sorted. */
  identities(gen: number): Promise<string[]>;
}

export interface ProjectionSourceOptions {
  /** A Redis call slower than this answers 503 store_unavailable. */
  storeTimeoutMs: number;
  log?: Logger;
}

/** The reader calls the routes make (a fake in tests). */
type StoreReader = Pick<ProjectionReader, "generation" | "read" | "identities">;

export function projectionSource(reader: StoreReader, { storeTimeoutMs, log }: ProjectionSourceOptions): ProjectionSource {
  /** Settles like `call()`, or rejects once storeTimeoutMs has passed. */
  async function bounded<T>(what: string, call: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        call(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`${what}: no answer from Redis within ${storeTimeoutMs} ms`)), storeTimeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  function unavailable(what: string, error: unknown): HttpError {
    log?.warn("store unavailable", { what, error });
    return new HttpError(503, "store_unavailable", "the projection store is unavailable", {}, { "retry-after": "1" });
  }

  /** A Redis call: any failure is the store's (503), never the client's. */
  async function store<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await bounded(what, call);
    } catch (err) {
      throw unavailable(what, err);
    }
  }

  async function generation(): Promise<number> {
    try {
      return await bounded("generation", () => reader.generation());
    } catch (err) {
      // ProjectionReader.generation() throws a MufoldError when Redis answers but holds no generation.
      if (err instanceof MufoldError) {
        throw new HttpError(503, "no_generation", "nothing has been folded yet, or the state was lost (run `mufold replay --promote`)", {}, { "retry-after": "5" });
      }
      throw unavailable("generation", err);
    }
  }

  return {
    generation,
    async packet(identity) {
      const gen = await generation();
      const packet = await store("read", () => reader.read(identity, gen));
      if (packet === null) throw new HttpError(404, "unknown_identity", `no projection for identity ${identity}`, { identity });
      return packet;
    },
    identities: (gen) => store("identities", () => reader.identities(gen)),
  };
}
