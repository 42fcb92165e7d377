/**
 * An identity's packet parts, kept incrementally: folding k deliveries into an
 * identity of n touches O(k) subjects, history entries and conflicts, each
 * found or placed by binary search, and `flush` recomputes only those. The
 * result is the same PartsView `computeParts` builds from scratch (a unit
 * property test holds the two together), mutated in place, plus the list of
 * what changed, from which the fold writes only the changed fragments.
 *
 * The content digest is a sum (mod 2^256) of one sha256 per stored part, so a
 * change costs the hashes of the parts it changed, not of the whole packet.
 * Those element hashes also say whether a part's bytes changed, so once the
 * store holds a flush's fragments the caller may `release` them: a cached
 * identity then keeps each subject as its proposal and hash, and each history
 * entry as nothing beyond its kept version, not as a second copy of bytes
 * Redis already has.
 *
 * A worker caches thousands of these, most holding one or two observations
 * and no conflict: what only some identities need (conflicts, failing
 * rechecks) is created when first needed.
 */
import { hash } from "node:crypto";
import { AsciiDigest } from "./digest.js";
import { canonicalJson } from "./canonical-json.js";
import { compactJson } from "./compact-json.js";
import { conflictEntry, compareGroupKeys, type SubjectGroup } from "./identity-analysis.js";
import { subjectIdOf, type ReducerContext } from "./identity.js";
import { flat } from "./flat-string.js";
import { deliveriesOf, type FingerprintState, type IdentityState } from "./identity-state.js";
import type { Observation } from "./observation.js";
import { compareOrder } from "./ordering.js";
import { ofContext, ownedContext, ownedObservation, pooledList } from "./owned-observation.js";
import { ObservationShelf, ShelvedObservation, isContractFingerprint } from "./shelved-observation.js";
import { partHash, Sum256 } from "./part-hash.js";
import {
  invalidRequestJson,
  skeletonFrom,
  subjectPartOf,
  type HistoryPart,
  type LevelCounts,
  type PartsView,
  type SubjectFactors,
  type SubjectPart,
} from "./packet-parts.js";
import { MAX_PROJECTION_HISTORY, MAX_PROJECTION_OBSERVATIONS, MAX_PROJECTION_SUBJECTS } from "./projection-limits.js";
import { rejectedProjection } from "./reducer.js";
import { FactorList } from "./subject.js";
import { historyEntryFragment } from "./observation-json.js";
import { historyMember } from "./sort-keys.js";
import { giveBackFragment, type Fragment } from "./fragment.js";
import { insertAt, removeAt } from "./list-edit.js";
import { PickedMap } from "./picked-map.js";

/** One part before and after a flush (undefined = absent). */
export interface PartChange<T> {
  /** The part's id: the subject's, or the observation's of a history entry or a conflict. */
  id: string;
  before: T | undefined;
  after: T | undefined;
  /**
   * The stored bytes differ: the element hash changed (for a subject it covers
   * its proposal too, which its fragment's review state already implies). The
   * writes go by this, not by comparing fragments, which `release` empties.
   */
  rewritten: boolean;
}

/**
 * What one flush changed, by part: each id at most once, in the order the
 * folds touched them. Lists, not Maps: a flush made three Maps and grew them,
 * ~3.9 KB of young garbage per identity batch (bench/engine.bench.ts).
 */
export interface PartsChanges {
  subjects: PartChange<SubjectPart>[];
  history: PartChange<HistoryPart>[];
  conflicts: PartChange<string>[];
}

interface Group extends SubjectGroup {
  /** Its part as the last flush left it (the store's), undefined before its first flush. */
  part: SubjectPart | undefined;
  /**
   * The items in the reference's time order (compareOrder): their history members' byte order. While the
   * group holds one observation (most do) it is the same list as `items` (see accept): two lists of one
   * cost a cached subject ~56 bytes more.
   */
  chronoObs: Observation[];
  /** Buckets and factors of `items` and of `chronoObs`, spliced with them; kept from FACTOR_LISTS_FROM items on. */
  factors: SubjectFactors | null;
  /** Where the identity's shelf holds the element hash of its stored part; -1 before its first flush. */
  hashAt: number;
}

/**
 * A subject keeps factor lists (subject.ts) once it holds this many
 * observations: below it, walking the observations costs about as much as
 * walking the lists, and most subjects hold one or two (the pipeline bench's
 * ~36 per identity of ~44 observations), where the lists' five objects would
 * be most of what the subject keeps.
 */
const FACTOR_LISTS_FROM = 8;


/** What the folds since the last flush touched. */
interface Dirty {
  groups: Set<Group>;
  history: Set<string>;
  conflicts: Set<string> | null;
  /**
   * Stored history parts taken back since (unaccept), as they were, with their element hashes; null: none yet.
   * An id touched first by `accept` was not accepted at the last flush, so the store holds no entry of it.
   */
  gone: Map<string, { part: HistoryPart; hash: string }> | null;
}

/** A map every model's parts share until their first conflict: it stays empty (a set throws). */
class NoEntries<V> extends Map<string, V> {
  override set(): this {
    throw new Error("NoEntries is a shared empty map");
  }
}
const NO_CONFLICTS = new NoEntries<string>();
const NO_CONFLICT_COUNTS = new NoEntries<number>();

/**
 * A version the state keeps. While it is its id's only version (the id is
 * accepted) it is also the id's history part: `group` is its subject group
 * (null otherwise) and `fragment` its history entry until the store holds it.
 * One object, not a version and a part: a cached observation kept ~100 bytes
 * more for a second object and its element hash, which a flush needs again
 * only when the entry goes or changes (rare: `unaccept` hashes it again).
 */
interface KeptVersion extends FingerprintState, HistoryPart {
  group: Group | null;
  fragment: Fragment;
  count: number;
  readonly representative: Observation;
  readonly fingerprint: string;
  hasFingerprint(fingerprint: string): boolean;
}

/**
 * The version almost every payload is: its representative itself, shelved
 * with its fingerprint (shelved-observation.ts), so a kept observation is one
 * object (a version of its own beside it was ~64 bytes more). An earlier
 * delivery of the payload differs from it only in created_at (the fingerprint
 * covers every other field), so it represents the payload by taking that
 * created_at (`redate`).
 */
class KeptObservation extends ShelvedObservation implements KeptVersion {
  group: Group | null = null;
  fragment: Fragment = "";

  /** `fingerprint`: of the contract's form (isContractFingerprint), so the shelf holds it. */
  constructor(
    o: Observation,
    owned: boolean,
    shelf: ObservationShelf,
    fingerprint: string,
    public count: number,
  ) {
    super(o, owned, shelf, fingerprint);
  }

  get representative(): Observation {
    return this;
  }

  /** Made when read from the shelf (rare: a payload delivered again, a conflict, the refs of a loaded model). */
  get fingerprint(): string {
    return this.shelvedFingerprint();
  }

  /** Made when read (see historyPart). */
  get member(): string {
    return historyMember(this.created_at, this.observation_id);
  }
}

/** A version whose representative is kept apart: of another context, or a fingerprint not of the contract's form. */
class SeparateVersion implements KeptVersion {
  group: Group | null = null;
  fragment: Fragment = "";

  constructor(
    readonly fingerprint: string,
    public representative: Observation,
    public count: number,
  ) {}

  hasFingerprint(fingerprint: string): boolean {
    return this.fingerprint === fingerprint;
  }

  get member(): string {
    return historyMember(this.representative.created_at, this.representative.observation_id);
  }
}

/** The version of `versions` with this fingerprint (versionOf without a string made per version). */
function withFingerprint(versions: readonly KeptVersion[], fingerprint: string): KeptVersion | undefined {
  for (const v of versions) if (v.hasFingerprint(fingerprint)) return v;
  return undefined;
}

/**
 * An id's versions: its one version (almost every id: a list of one cost a
 * cached observation ~56 bytes, its array and its elements), or the list
 * once a second payload came.
 */
type Versions = KeptVersion | KeptVersion[];

/** The store holds `part`'s fragment: give it back (the plan's ops, its only other holder, are done with it). */
function letGo(part: { fragment: Fragment }): void {
  giveBackFragment(part.fragment);
  part.fragment = "";
}

/** An id's history part: its version while it is accepted (one version, in a subject group). */
function historyOf(versions: Versions): KeptVersion | undefined {
  return Array.isArray(versions) || versions.group === null ? undefined : versions;
}

function listOf(versions: Versions): KeptVersion[] {
  return Array.isArray(versions) ? versions : [versions];
}

/**
 * Index of the first observation not below `obs` in the reference's order (compareOrder: the history members'
 * byte order, sort-keys.ts). A new observation is usually the latest, so the last is tried first: on a cached
 * model that has gone cold between batches each step of the search is a cache miss (~5 µs a search at ~100).
 */
function orderBound(items: readonly Observation[], obs: Observation): number {
  let lo = 0;
  let hi = items.length;
  if (hi > 0 && compareOrder(items[hi - 1]!, obs) < 0) return hi;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareOrder(items[mid]!, obs) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the first item whose id is not below `id` (JS string order, as analyzeIdentityState sorts ids). */
function lowerBound(items: readonly Observation[], id: string): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (items[mid]!.observation_id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const packetDigest = new AsciiDigest();

export class IdentityParts {
  /** Every id's versions. */
  private readonly byId = new Map<string, Versions>();
  /**
   * The subject groups, by subject id: the contract's identity of a subject (a sha256 of its level, memory
   * digests and, at level none, receipt), so the map shares each group's id string. Keyed by those fields
   * joined instead, a cached subject kept a ~50-byte key more, and a second Map held its part.
   */
  private readonly groups = new Map<string, Group>();
  private delivered = 0;
  readonly parts: PartsView = {
    rejected: null,
    skeleton: "",
    accepted: 0,
    deliveries: 0,
    // A group's part; every group has one once flushed (an emptied group is dropped then): read only then.
    subjects: new PickedMap(this.groups, (group: Group) => group.part, () => this.groups.size),
    // The accepted versions are the history parts (KeptVersion), as stored once flushed: read only then.
    history: new PickedMap(this.byId, historyOf, () => this.parts.accepted),
    conflicts: NO_CONFLICTS,
    conflictCounts: NO_CONFLICT_COUNTS,
  };
  private readonly levels: LevelCounts = { item: 0, set: 0, none: 0 };
  private duplicates = 0;
  /** Observations the state keeps: one representative per (id, fingerprint). */
  private representatives = 0;
  private conflictingDeliveries = 0;
  private latest: Observation | null = null;
  private latestStale = false;
  /** Subjects whose review state is conflict, and subjects the readback re-reduction disagrees on (null: none yet). */
  private conflictSubjects: Set<string> | null = null;
  private failing: Map<string, Group> | null = null;
  /**
   * Created by the first fold and kept: a fresh set for every flush instead
   * raised what survives a scavenge by ~2.3 KB a record in the fold (bench/heap-traffic.ts).
   */
  private dirty: Dirty | null = null;
  /** The sum of the stored parts' element hashes: a subject's is on the shelf, a conflict's in conflictHashes. */
  private readonly sum = new Sum256();
  private conflictHashes: Map<string, string> | null = null;
  /** The kept observations' bytes (shelved-observation.ts). */
  private readonly shelf: ObservationShelf;

  /** Past the delivery bound: the packet is a constant rejected packet and nothing else is kept. */
  private isSealed = false;

  /** The identity's context, owned (owned-observation.ts). */
  readonly context: ReducerContext;

  constructor(context: ReducerContext) {
    this.context = ownedContext(context);
    this.shelf = new ObservationShelf(this.context);
  }

  get sealed(): boolean {
    return this.isSealed;
  }

  /** Observations held: one per distinct payload of each id (accepted ones and every version of a conflict). */
  get kept(): number {
    return this.representatives;
  }

  /** Deliveries folded, the sealed ones included. */
  get deliveries(): number {
    return this.delivered;
  }

  /** An id's versions (a new list for an id of one version), or undefined for an id not kept. */
  versionsOf(id: string): readonly FingerprintState[] | undefined {
    const entry = this.byId.get(id);
    return entry === undefined ? undefined : listOf(entry);
  }

  /** The representative of the id's version with this fingerprint, if it is kept. */
  representativeOf(id: string, fingerprint: string): Observation | undefined {
    const entry = this.byId.get(id);
    if (entry === undefined) return undefined;
    if (!Array.isArray(entry)) return entry.hasFingerprint(fingerprint) ? entry.representative : undefined;
    return withFingerprint(entry, fingerprint)?.representative;
  }

  /** Every kept version's fingerprint. */
  *fingerprints(): Generator<string> {
    for (const entry of this.byId.values()) {
      if (!Array.isArray(entry)) yield entry.fingerprint;
      else for (const v of entry) yield v.fingerprint;
    }
  }

  /** The state as an IdentityState: a copy made when asked (tools, tests), not what the model keeps. */
  get state(): IdentityState {
    const byId = new Map<string, FingerprintState[]>();
    for (const [id, entry] of this.byId) byId.set(id, Array.isArray(entry) ? entry.slice() : [entry]);
    return { byId, deliveries: this.delivered };
  }

  /**
   * Fold one delivery; the parts change at the next flush. Returns what the delivery was. `owned`: the
   * observation's strings are its own (ReadObservation.owned), so the kept copy takes them without copying.
   */
  fold(obs: Observation, fingerprint: string, owned = false): "new" | "duplicate" | "conflict" | "sealed" {
    this.delivered++;
    if (this.isSealed) return "sealed";
    // What the state keeps is a kept copy (shelved-observation.ts), made only when it is kept; the id it
    // keys the state and the parts with is a kept observation's (the delivery's own may be a view into its record).
    const entry = this.byId.get(obs.observation_id);
    if (entry === undefined) {
      const version = this.version(obs, owned, fingerprint, 1);
      this.byId.set(version.representative.observation_id, version);
      this.representatives++;
      this.accept(version, obs, fingerprint);
      return "new";
    }
    if (!Array.isArray(entry)) {
      // An accepted id (its one version, kept without a list).
      if (entry.hasFingerprint(fingerprint)) {
        entry.count++;
        this.duplicates++;
        if (compareOrder(obs, entry.representative) < 0) {
          this.unaccept(entry); // (where it was, before it moves)
          this.represent(entry, obs, owned);
          this.accept(entry, obs, fingerprint);
        }
        return "duplicate";
      }
      // A second payload: the id becomes a conflict, its versions a list.
      this.byId.set(entry.representative.observation_id, [entry, this.version(obs, owned, fingerprint, 1)]);
      this.representatives++;
      this.unaccept(entry);
      this.conflictingDeliveries += entry.count + 1;
      this.touchConflict(entry.representative.observation_id);
      return "conflict";
    }
    // A conflict: every further delivery of its id counts toward it.
    this.conflictingDeliveries++;
    this.touchConflict(entry[0]!.representative.observation_id);
    const prior = withFingerprint(entry, fingerprint);
    if (prior !== undefined) {
      prior.count++;
      this.duplicates++;
      if (compareOrder(obs, prior.representative) < 0) this.represent(prior, obs, owned);
      return "duplicate";
    }
    entry.push(this.version(obs, owned, fingerprint, 1));
    this.representatives++;
    return "conflict";
  }

  /**
   * A new version of `obs`'s payload: a kept observation with its fingerprint on the shelf (a kept string was ~88
   * bytes of heap an observation), or, for one of another context or a fingerprint of another form, a kept copy
   * beside it.
   */
  private version(obs: Observation, owned: boolean, fingerprint: string, count: number): KeptVersion {
    if (ofContext(obs, this.context) && isContractFingerprint(fingerprint)) return new KeptObservation(obs, owned, this.shelf, fingerprint, count);
    return new SeparateVersion(fingerprint, this.keptCopy(obs, owned), count);
  }

  /** A separate version's representative: shelved when of the identity's context, else a copy of its own. */
  private keptCopy(obs: Observation, owned: boolean): Observation {
    return ofContext(obs, this.context) ? new ShelvedObservation(obs, owned, this.shelf) : ownedObservation(obs, this.context);
  }

  /** `obs`, an earlier delivery of `version`'s payload, represents it now. */
  private represent(version: KeptVersion, obs: Observation, owned: boolean): void {
    if (version instanceof KeptObservation) version.redate(obs.created_at, owned);
    else (version as SeparateVersion).representative = this.keptCopy(obs, owned);
  }

  /** Load stored state (every id's versions) without per-delivery bookkeeping; flush afterwards. */
  load(byId: ReadonlyMap<string, readonly FingerprintState[]>, deliveries: number): void {
    this.delivered = deliveries;
    for (const [id, read] of byId) {
      // Kept copies (read from stored fragments: see fold), as versions of the parts' own shape.
      const versions = read.map((v) => this.version(v.representative, false, v.fingerprint, v.count));
      this.byId.set(id, versions.length === 1 ? versions[0]! : versions);
      this.representatives += versions.length;
      const count = deliveriesOf(versions);
      this.duplicates += count - versions.length;
      if (versions.length === 1) this.accept(versions[0]!, read[0]!.representative, read[0]!.fingerprint);
      else {
        this.conflictingDeliveries += count;
        this.touchConflict(id);
      }
    }
  }

  /**
   * Accept the only version of its id. Its representative is the kept copy, `full` the observation it was
   * made from: what only the group's key and the history fragment read (the kept copy reads those from its
   * shelf, slowly) is read from `full`, and its fingerprint is `fingerprint` (the version's, read from the shelf
   * only slowly).
   */
  private accept(version: KeptVersion, full: Observation, fingerprint: string): void {
    const obs = version.representative;
    const id = obs.observation_id;
    const subjectId = subjectIdOf(full);
    let group = this.groups.get(subjectId);
    if (group === undefined) {
      // Spelled out, not spread: a spread here cost ~2 µs a group (a profile of the fold). The lists start as
      // one literal of one, shared: an element inserted or pushed into an empty array gets room for 17 (~130
      // bytes unused), and most subjects keep one or two observations.
      // subjectGroupOf's group, made here without its own object and list first.
      const level = full.attribution_level;
      const digests = pooledList(full.memory_ref_digests); // `full`'s list may hold views into its record
      const key = level === "none" ? [subjectId] : digests;
      const one = [obs];
      group = { level, key, subjectId, digests, items: one, chronoObs: one, factors: null, hashAt: -1, part: undefined };
      this.groups.set(subjectId, group);
      this.levels[group.level]++;
    } else if (group.items === group.chronoObs) {
      // One list of at most one: two orders of two are literals of two (an insert would make room for 17).
      const other = group.items[0];
      if (other === undefined) group.items.push(obs);
      else {
        group.items = other.observation_id < id ? [other, obs] : [obs, other];
        group.chronoObs = compareOrder(other, obs) < 0 ? [other, obs] : [obs, other];
      }
    } else {
      const i = lowerBound(group.items, id);
      insertAt(group.items, i, obs);
      const at = orderBound(group.chronoObs, obs);
      insertAt(group.chronoObs, at, obs);
      if (group.factors !== null) {
        group.factors.byId.insert(i, obs);
        group.factors.inTime.insert(at, obs);
      } else if (group.items.length >= FACTOR_LISTS_FROM) {
        group.factors = { byId: FactorList.of(group.items), inTime: FactorList.of(group.chronoObs) };
      }
    }
    const dirty = this.touched();
    dirty.groups.add(group);
    version.group = group;
    version.fragment = historyEntryFragment(full, fingerprint, group.subjectId);
    dirty.history.add(id);
    if (!this.latestStale && (this.latest === null || compareOrder(obs, this.latest) >= 0)) this.latest = obs;
  }

  /** Take back an accepted version (its id gained a second version, or an earlier delivery of it came). */
  private unaccept(version: KeptVersion): void {
    const group = version.group!;
    const id = version.representative.observation_id;
    const dirty = this.touched();
    // Its fragment was made by an accept since the last flush (in no plan's ops yet), or at or before that flush:
    // released then (""), or held by the ops of a plan that did not land, which only the model's owner may drop.
    const madeSinceFlush = dirty.history.has(id);
    if (!madeSinceFlush) {
      // Accepted at the last flush (its first change since), so stored: what it was, for the flush to take back.
      const fragment = historyEntryFragment(version.representative, version.fingerprint, group.subjectId);
      const hash = partHash(fragment);
      giveBackFragment(fragment);
      (dirty.gone ??= new Map()).set(id, { part: { member: version.member, fragment: "" }, hash });
    }
    if (group.items === group.chronoObs) group.items.pop(); // its one observation, in the one list of both orders
    else {
      const i = lowerBound(group.items, id);
      removeAt(group.items, i);
      group.factors?.byId.remove(i);
      const at = orderBound(group.chronoObs, version.representative);
      removeAt(group.chronoObs, at);
      group.factors?.inTime.remove(at);
    }
    dirty.groups.add(group);
    version.group = null;
    if (madeSinceFlush) giveBackFragment(version.fragment);
    version.fragment = "";
    dirty.history.add(id);
    if (this.latest === version.representative) this.latestStale = true;
  }

  private touched(): Dirty {
    return (this.dirty ??= { groups: new Set(), history: new Set(), conflicts: null, gone: null });
  }

  private touchConflict(id: string): void {
    const dirty = this.touched();
    (dirty.conflicts ??= new Set()).add(id);
  }

  /** Recompute what the folds since the last flush changed; the parts are updated in place. */
  flush(): PartsChanges {
    const changes: PartsChanges = { subjects: [], history: [], conflicts: [] };
    const parts = this.parts;
    parts.deliveries = this.delivered;
    if (!this.isSealed && this.delivered > MAX_PROJECTION_OBSERVATIONS) this.seal();
    if (this.isSealed) return changes;
    const dirty = this.dirty;
    for (const group of dirty?.groups ?? []) {
      const before = group.part;
      // (a group has a stored part once flushed, and its hash slot since)
      const beforeHash = before === undefined ? undefined : this.shelf.hashAt(group.hashAt);
      if (beforeHash !== undefined) this.sum.add(beforeHash, -1);
      if (before?.conflict === true) this.conflictSubjects?.delete(group.subjectId);
      this.failing?.delete(group.subjectId);
      let after: SubjectPart | undefined;
      let afterHash: string | undefined;
      if (group.items.length === 0) {
        this.groups.delete(group.subjectId);
        this.levels[group.level]--;
      } else {
        after = subjectPartOf(group, group.chronoObs, group.factors ?? undefined); // (its `items` is the group's live list: not for computeParts' reuse)
        if (typeof after.fragment === "string") flat(after.fragment);
        if (after.proposal !== null) flat(after.proposal);
        group.part = after;
        afterHash = partHash(after.fragment, after.proposal);
        if (group.hashAt < 0) group.hashAt = this.shelf.hashSlot();
        this.shelf.putHash(group.hashAt, afterHash);
        this.sum.add(afterHash, 1);
        if (after.conflict) (this.conflictSubjects ??= new Set()).add(group.subjectId);
        if (after.recheckFailure !== null) (this.failing ??= new Map()).set(group.subjectId, group);
      }
      changes.subjects.push({ id: group.subjectId, before, after, rewritten: beforeHash !== afterHash });
    }
    for (const id of dirty?.history ?? []) {
      // Before: the stored entry as it was when taken back; none if the id's first change was an accept.
      const gone = dirty!.gone?.get(id);
      const entry = this.byId.get(id);
      const after = entry === undefined ? undefined : historyOf(entry);
      if (gone === undefined && after === undefined) continue; // accepted and taken back since the last flush
      const beforeHash = gone?.hash;
      if (beforeHash !== undefined) this.sum.add(beforeHash, -1);
      let afterHash: string | undefined;
      if (after !== undefined) {
        if (typeof after.fragment === "string") flat(after.fragment);
        afterHash = partHash(after.fragment);
        this.sum.add(afterHash, 1);
      }
      changes.history.push({ id, before: gone?.part, after, rewritten: beforeHash !== afterHash });
    }
    for (const id of dirty?.conflicts ?? []) {
      const versions = listOf(this.byId.get(id)!);
      const before = parts.conflicts.get(id);
      const count = deliveriesOf(versions);
      if (before !== undefined && parts.conflictCounts.get(id) === count) continue;
      const after = flat(compactJson(conflictEntry(id, versions.map((v) => v.fingerprint), count)));
      const hashes = (this.conflictHashes ??= new Map());
      const beforeHash = hashes.get(id);
      if (beforeHash !== undefined) this.sum.add(beforeHash, -1);
      const afterHash = partHash(after);
      hashes.set(id, afterHash);
      this.sum.add(afterHash, 1);
      if (parts.conflicts === NO_CONFLICTS) {
        parts.conflicts = new Map();
        parts.conflictCounts = new Map();
      }
      parts.conflicts.set(id, after);
      parts.conflictCounts.set(id, count);
      changes.conflicts.push({ id, before, after, rewritten: before !== after });
    }
    if (dirty !== null) {
      dirty.groups.clear();
      dirty.history.clear();
      dirty.conflicts?.clear();
      dirty.gone?.clear();
    }
    if (this.latestStale) {
      this.latest = null;
      for (const entry of this.byId.values()) {
        if (Array.isArray(entry)) continue; // a conflict
        const obs = entry.representative;
        if (this.latest === null || compareOrder(obs, this.latest) >= 0) this.latest = obs;
      }
      this.latestStale = false;
    }
    // An id is accepted while it has one version; one with more is in the conflicts (the loop above listed it).
    const accepted = this.byId.size - parts.conflicts.size;
    parts.accepted = accepted;
    parts.skeleton = flat(skeletonFrom(
      this.context,
      {
        accepted,
        latest: this.latest === null ? [null, null] : [this.latest.created_at, this.latest.observation_id],
        duplicates: this.duplicates,
        conflicts: parts.conflicts.size,
        conflictingDeliveries: this.conflictingDeliveries,
        conflictProposal: (this.conflictSubjects?.size ?? 0) > 0,
      },
      this.levels,
    ));
    parts.rejected = this.rejection(accepted);
    return changes;
  }

  /**
   * The store now holds what `changes` (this model's last flush) wrote: let go
   * of those subject and history fragments. A subject's proposal and element
   * hash stay, which is all a later flush compares (a history entry's hash is
   * made again when it goes: `unaccept`); a released part reads as an empty
   * fragment, so a cached model keeps only what it compares.
   */
  release(changes: PartsChanges): void {
    for (const { after } of changes.subjects) if (after !== undefined) letGo(after);
    for (const { after } of changes.history) if (after !== undefined) letGo(after);
  }

  /** Past the bound for good: drop everything but the delivery count (the caller deletes the stored parts). */
  private seal(): void {
    this.isSealed = true;
    this.byId.clear();
    this.shelf.clear(); // (what only the dropped observations read: ~200 KB at the bound)
    this.representatives = 0;
    this.latest = null; // (a kept observation: it would hold its subject group, and that group every observation in it)
    this.latestStale = false;
    this.groups.clear();
    this.parts.conflicts = NO_CONFLICTS;
    this.parts.conflictCounts = NO_CONFLICT_COUNTS;
    this.failing = null;
    this.conflictHashes = null;
    this.conflictSubjects = null;
    this.dirty = null;
    this.parts.skeleton = "";
    this.parts.accepted = 0;
    this.parts.rejected = canonicalJson(rejectedProjection(this.context, ["observation_malformed"]));
    this.sum.clear();
  }

  /** A stored identity already past the bound. */
  loadSealed(deliveries: number): void {
    this.delivered = deliveries;
    this.parts.deliveries = deliveries;
    this.seal();
  }

  private rejection(accepted: number): string | null {
    if (this.groups.size > MAX_PROJECTION_SUBJECTS) return canonicalJson(rejectedProjection(this.context, ["projection_subject_limit_exceeded"], accepted));
    if (this.failing === null || this.failing.size === 0 || accepted > MAX_PROJECTION_HISTORY) return null;
    const first = [...this.failing.values()].sort(compareGroupKeys)[0]!;
    return invalidRequestJson(`projection subject ${first.subjectId} ${first.part!.recheckFailure} is inconsistent`);
  }

  /**
   * The content digest: sha256 over the packet's skeleton (or its rejected
   * packet) and the sum of the stored parts' hashes. Equal parts give equal
   * digests in any worker or generation; any changed part changes it.
   */
  digest(): string {
    if (this.parts.rejected !== null) return hash("sha256", "r\u0000" + this.parts.rejected, "hex");
    // Written into one buffer: the concatenation flattened a copy of the skeleton per plan (~0.7 KB a record).
    return packetDigest.start().put("p\u0000").putText(this.parts.skeleton).put("\u0000").put(this.sum.hex()).hex();
  }
}
