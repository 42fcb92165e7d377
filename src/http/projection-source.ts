/**
 * The routes' access to the projection store: every Redis call bounded by a
 * timeout, and every failure of it turned into the answer a client should see
 * (503 for the store, 404 for an unknown identity, 422 for a point of the past
 * the store cannot answer): the one place that maps them.
 */
import { MufoldError } from "../errors.js";
import type { Logger } from "../observability/log.js";
import type { ProjectionExplanation, ProjectionReader } from "../client/readback.js";
import { AsOfNotAvailableError, type AsOf } from "../client/past.js";
import type { LogPosition } from "../fold/offset-index.js";
import { HttpError } from "./reply.js";

/** A packet as of a point of the past, and what it used. */
export interface AsOfPacket {
  text: string;
  /** Per partition, the offset of the last delivery the packet includes. */
  used: readonly LogPosition[];
  /** How many of the identity's deliveries it includes. */
  deliveries: number;
}

export interface ProjectionSource {
  /** The live generation, read on every request (a promoted replay is served at once); 503 when there is none. */
  generation(): Promise<number>;
  /** The stored packet of `identity` in the live generation; 404 unknown_identity when there is none. */
  packet(identity: string): Promise<string>;
  /** The packet of `identity` as of a point; 404 unknown_identity, 422 as_of_not_available. */
  packetAsOf(identity: string, asOf: AsOf): Promise<AsOfPacket>;
  /** The deliveries of `identity` explained, up to a point or (none) all of them; errors as packetAsOf. */
  explain(identity: string, asOf: AsOf | undefined): Promise<ProjectionExplanation>;
  /** Every identity of generation `gen`, sorted. */
  identities(gen: number): Promise<string[]>;
}

export interface ProjectionSourceOptions {
  /** A Redis call slower than this answers 503 store_unavailable. */
  storeTimeoutMs: number;
  log?: Logger;
}

/** The reader calls the routes make (a fake in tests). */
type StoreReader = Pick<ProjectionReader, "generation" | "read" | "identities" | "get" | "explain">;

const unknownIdentity = (identity: string) => new HttpError(404, "unknown_identity", `no projection for identity ${identity}`, { identity });

/** 422 with what can be asked for instead; bigints as strings (a JSON number would lose digits past 2^53). */
function notAvailable(err: AsOfNotAvailableError): HttpError {
  const a = err.available;
  return new HttpError(422, "as_of_not_available", err.message, { available: a === null ? null : { partition: a.partition, from: String(a.from), to: String(a.to) } });
}

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

  /**
   * A read of the past: the generation first, so that "none" is no_generation as on every route (inside the
   * reader it is an untyped MufoldError); then a point it cannot answer is 422, any other failure the store's.
   */
  async function past<T>(what: string, identity: string, call: () => Promise<T | null>): Promise<T> {
    await generation();
    let answer: T | null;
    try {
      answer = await bounded(what, call);
    } catch (err) {
      if (err instanceof AsOfNotAvailableError) throw notAvailable(err);
      throw unavailable(what, err);
    }
    if (answer === null) throw unknownIdentity(identity);
    return answer;
  }

  return {
    generation,
    async packet(identity) {
      const gen = await generation();
      const packet = await store("read", () => reader.read(identity, gen));
      if (packet === null) throw unknownIdentity(identity);
      return packet;
    },
    async packetAsOf(identity, asOf) {
      const read = await past("as-of read", identity, () => reader.get(identity, { asOf }));
      // An as-of read always says what it used; without it the reader broke its contract.
      if (read.asOf === undefined) throw new Error(`the as-of read of ${identity} did not say what it used`);
      return { text: read.text, used: read.asOf.used, deliveries: read.asOf.deliveries };
    },
    explain: (identity, asOf) => past("explain", identity, () => reader.explain(identity, asOf === undefined ? {} : { asOf })),
    identities: (gen) => store("identities", () => reader.identities(gen)),
  };
}
