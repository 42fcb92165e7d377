/**
 * Run as `node --expose-gc --import tsx retention-probe.ts canonical|bytes|plain|slow`:
 * prints the bytes of heap an identity model keeps per observation it folded,
 * once the texts are gone (observation-retention.unit.spec.ts). A process of
 * its own, so the heap holds nothing but the probe. Each text sits after
 * PADDING spaces (read at that offset, or as JSON whitespace by the slow
 * path): a model that kept its texts alive would keep the padding too.
 *   canonical: the canonical tier (checked: it must take every text);
 *   bytes: the canonical tier on the text's bytes, its observation kept itself (adopted);
 *   plain: whitespace and keys in reverse order, the plain tier;
 *   slow: an escaped key, which only parsePyJson + validateObservation take.
 */
import { contextOfObservation, canonicalJson, observationFingerprint, observationToPy, parsePyJson, validateObservation, type Observation } from "../../src/core/index.js";
import { observationIdOf } from "../../src/core/observation.js";
import { IdentityParts } from "../../src/core/identity-parts.js";
import { readObservationBytes } from "../../src/core/observation-bytes.js";
import { readCanonicalObservation, readObservation, type ReadObservation } from "../../src/core/observation-reader.js";
import { simulate } from "../../producers/simulation.js";

const PADDING = 16_000;
const gc = (globalThis as { gc?: () => void }).gc!;
const tier = process.argv[2] ?? "canonical";

function text(o: Observation): string {
  const canonical = canonicalJson(observationToPy(o));
  if (tier === "canonical" || tier === "bytes") return canonical;
  if (tier === "slow") return canonical.replace('"observation_id"', '"observation\\u005fid"');
  return JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(canonical) as Record<string, unknown>).reverse()), null, 1);
}

function read(padded: string): ReadObservation {
  if (tier === "bytes") {
    const r = readObservationBytes(Buffer.from(padded, "latin1"));
    if (r === null || !r.owned) throw new Error("the bytes tier refused a canonical text");
    return r;
  }
  if (tier === "canonical") {
    const r = readCanonicalObservation(padded, PADDING);
    if (r === null) throw new Error("the canonical tier refused a canonical text");
    return r.read;
  }
  if (tier === "slow") {
    if (readObservation(padded, PADDING) !== null) throw new Error("a fast tier took the slow path's text");
    const observation = validateObservation(parsePyJson(padded));
    return { observation, fingerprint: observationFingerprint(observation), owned: false };
  }
  const r = readObservation(padded, PADDING);
  if (r === null || readCanonicalObservation(padded, PADDING) !== null) throw new Error("the plain tier did not take a plain text");
  return r;
}

/** Evidence refs of 13 characters or more, as real ones are, so a kept one that is a view into its text would show. */
function longEvidence(o: Observation): Observation {
  if (o.evidence_refs.length === 0) return o;
  const lengthened = { ...o, evidence_refs: o.evidence_refs.map((r) => `${r}:artifact-of-the-outcome`) };
  return { ...lengthened, observation_id: observationIdOf(lengthened) };
}

const observations = [...simulate({ agents: 50, observationsPerAgent: 80, snapshotEvery: 10, duplicateRate: 0, conflictRate: 0, seed: 7 })].map((d) => longEvidence(d.observation));
const hold: Map<string, IdentityParts>[] = [];

/** Heap kept per observation folded (the models held) after full collections. */
function round(part: Observation[]): number {
  gc();
  gc();
  const before = process.memoryUsage().heapUsed;
  const models = new Map<string, IdentityParts>();
  let list: string[] | null = part.map((o) => " ".repeat(PADDING) + text(o));
  for (const t of list) {
    const r = read(t);
    const context = contextOfObservation(r.observation, "memory_utility_reducer_v0");
    const key = JSON.stringify(context);
    let model = models.get(key);
    if (model === undefined) models.set(key, (model = new IdentityParts(context)));
    model.fold(r.observation, r.fingerprint, r.owned);
  }
  list = null;
  for (const model of models.values()) model.flush();
  hold.push(models);
  gc();
  gc();
  return (process.memoryUsage().heapUsed - before) / part.length;
}

// The first round compiles the code and makes its one-time allocations; the second is the measurement.
round(observations.slice(0, 2000));
console.log(JSON.stringify({ padding: PADDING, perObservation: round(observations.slice(2000, 4000)) }));
