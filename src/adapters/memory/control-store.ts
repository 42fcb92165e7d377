/**
 * The ControlStore port in memory: the functions of mufold_control_v1.lua
 * (src/adapters/redis/functions/mufold_control_v1.lua, the specification)
 * mirrored step by step on a hash of the same fields, with the same refusals
 * and the same errors as the Redis adapter raises for them. The Lua's `TIME`
 * is the injected clock (microseconds), so leases run out when a test moves
 * the clock. The control contract suite (test/support/control-store-contract.ts)
 * runs against both stores.
 *
 * Pure: no IO, no real time.
 */
import { GenerationMovedError, LIVE_MODE, PauseLostError, PromoteBehindError, TopicOriginError, type ChangeEntries, type ControlState, type ControlStore } from "../../fold/control-store.js";
import { PositionContradictedError } from "../../fold/identity-store.js";

/** Microseconds of the store's time (the Lua's `TIME`): an integer, at most 2^53. */
export type MicrosecondClock = () => number;

/** The Lua `offset_greater`: offsets compare as decimal strings (exact past 2^53). */
function offsetGreater(a: string, b: string): boolean {
  if (a.length !== b.length) return a.length > b.length;
  return a > b;
}

export class MemoryControlStore implements ControlStore {
  /** The control hash, field by field as in Redis (all values strings). */
  private readonly hash = new Map<string, string>();
  /** The acks hash (`<prefix>:control:acks`). */
  private readonly acks = new Map<string, string>();
  /** Each generation's change stream (`<prefix>:g<N>:changes`): entries, trimmed exactly where Redis trims about. */
  private readonly streams = new Map<number, string[][]>();

  constructor(private readonly nowMicros: MicrosecondClock) {}

  private nowMs(): number {
    return Math.floor(this.nowMicros() / 1000);
  }

  private num(field: string): number {
    return Number(this.hash.get(field) ?? "0");
  }

  /** Lua `new_generation`: past the last one allocated, the live one and the clock, so never reused after a loss. */
  private newGeneration(): number {
    const n = Math.max(this.num("last") + 1, this.num("generation") + 1, this.nowMicros());
    this.hash.set("last", String(n));
    return n;
  }

  private pauseHolds(): boolean {
    if (this.hash.get("paused") !== "1") return false;
    return this.nowMs() < this.num("pause_until");
  }

  /** Lua `holds`: live, the generation is the live one; otherwise the mode is the build token it must hold. */
  private holds(gs: string, mode: string): boolean {
    if (mode === LIVE_MODE) return this.hash.get("generation") === gs;
    return this.hash.get(`building:${gs}`) === mode;
  }

  private current(): number | null {
    const g = this.hash.get("generation");
    return g === undefined ? null : Number(g);
  }

  /** Fields that start with `head`, with what follows it. */
  private fieldsUnder(head: string): [string, string][] {
    const out: [string, string][] = [];
    for (const [field, value] of this.hash) if (field.startsWith(head)) out.push([field.slice(head.length), value]);
    return out;
  }

  async state(): Promise<ControlState> {
    const g = this.hash.get("generation");
    const rv = g === undefined ? "" : (this.hash.get(`rv:${g}`) ?? "");
    return { generation: g === undefined ? null : Number(g), paused: this.pauseHolds(), epoch: this.num("epoch"), reducerVersion: rv === "" ? null : rv };
  }

  async liveGeneration(): Promise<number | null> {
    return this.current();
  }

  async initGeneration(reducerVersion: string): Promise<{ generation: number; reducerVersion: string }> {
    const g = this.hash.get("generation");
    if (g !== undefined) {
      let rv = this.hash.get(`rv:${g}`);
      if (rv === undefined) this.hash.set(`rv:${g}`, (rv = reducerVersion)); // made before reducer versions were recorded
      return { generation: Number(g), reducerVersion: rv };
    }
    const gs = String(this.newGeneration());
    this.hash.set("generation", gs);
    this.hash.set(`rv:${gs}`, reducerVersion);
    return { generation: Number(gs), reducerVersion };
  }

  async allocateGeneration(reducerVersion: string, buildToken: string, leaseMs: number): Promise<number> {
    const n = this.newGeneration();
    this.hash.set(`rv:${n}`, reducerVersion);
    this.hash.set(`building:${n}`, buildToken);
    this.hash.set(`building_until:${n}`, String(this.nowMs() + leaseMs));
    return n;
  }

  async renewBuild(generation: number, buildToken: string, leaseMs: number): Promise<void> {
    if (this.hash.get(`building:${generation}`) !== buildToken) throw new GenerationMovedError(generation, null);
    this.hash.set(`building_until:${generation}`, String(this.nowMs() + leaseMs));
  }

  async buildingGenerations(): Promise<Set<number>> {
    const now = this.nowMs();
    const out = new Set<number>();
    for (const [gs] of this.fieldsUnder("building:")) if (this.num(`building_until:${gs}`) > now) out.add(Number(gs));
    return out;
  }

  async seal(generation: number, mode: string, marks: ReadonlyMap<string, bigint>, firstOffsets: ReadonlyMap<string, bigint> = new Map(), changes?: ChangeEntries): Promise<void> {
    const gs = String(generation);
    if (!this.holds(gs, mode)) throw new GenerationMovedError(generation, this.current());
    if (mode === LIVE_MODE && this.pauseHolds()) throw new PauseLostError();
    for (const [partition] of marks) {
      const old = this.hash.get(`mark:${gs}:${partition}`);
      const first = firstOffsets.get(partition)?.toString() ?? "";
      if (mode === LIVE_MODE && old !== undefined && first !== "" && offsetGreater(first, old)) {
        // The Lua names no partition: like the Redis adapter, the error names it only for a one-partition seal.
        const only = marks.size === 1 ? partition : undefined;
        throw new PositionContradictedError("behind", generation, only ?? "?", (only === undefined ? undefined : firstOffsets.get(only)) ?? 0n);
      }
    }
    if (changes !== undefined && changes.entries.length > 0) {
      let stream = this.streams.get(generation);
      if (stream === undefined) this.streams.set(generation, (stream = []));
      for (const entry of changes.entries) stream.push([...entry]);
      if (stream.length > changes.maxLen) stream.splice(0, stream.length - changes.maxLen);
    }
    for (const [partition, next] of marks) {
      const field = `mark:${gs}:${partition}`;
      const old = this.hash.get(field);
      if (old === undefined || offsetGreater(next.toString(), old)) this.hash.set(field, next.toString());
    }
  }

  /** The change stream of a generation, oldest first (what XRANGE - + gives of `<prefix>:g<N>:changes`). */
  async changes(generation: number): Promise<string[][]> {
    return (this.streams.get(generation) ?? []).map((entry) => [...entry]);
  }

  async checkOrigin(generation: number, mode: string, partition: string, fingerprint: string): Promise<void> {
    const gs = String(generation);
    if (!this.holds(gs, mode)) throw new GenerationMovedError(generation, this.current());
    const field = `origin:${gs}:${partition}`;
    const stored = this.hash.get(field);
    if (stored === undefined) this.hash.set(field, fingerprint);
    else if (stored !== fingerprint) throw new TopicOriginError(partition, generation);
  }

  async generationFields(generation: number, kind: "mark" | "origin"): Promise<Map<string, string>> {
    return new Map(this.fieldsUnder(`${kind}:${generation}:`));
  }

  async pause(epoch: number | null, leaseMs: number): Promise<number> {
    let held: string;
    if (epoch === null) {
      if (this.pauseHolds()) throw new PauseLostError();
      held = String(this.num("epoch") + 1); // HINCRBY
      this.hash.set("epoch", held);
    } else {
      held = String(epoch);
      if (this.hash.get("epoch") !== held || !this.pauseHolds()) throw new PauseLostError();
    }
    this.hash.set("paused", "1");
    this.hash.set("pause_until", String(this.nowMs() + leaseMs));
    return Number(held);
  }

  async unpause(epoch: number): Promise<void> {
    if (this.hash.get("epoch") !== String(epoch)) return;
    this.hash.set("paused", "0");
    this.hash.set("pause_until", "0");
  }

  async ackPause(member: string, epoch: number): Promise<void> {
    this.acks.set(member, String(epoch));
  }

  async clearPauseAcks(): Promise<void> {
    this.acks.clear();
  }

  async pauseAcks(): Promise<Record<string, string>> {
    return Object.fromEntries(this.acks);
  }

  async promote(generation: number, buildToken: string, epoch: number | null, previous: number | null, logChanged = false): Promise<void> {
    const gs = String(generation);
    const live = this.hash.get("generation");
    const building = this.hash.get(`building:${gs}`);
    if (live === gs && building === undefined) return; // already done: a resent call whose first reply was lost
    if (building !== buildToken) throw new GenerationMovedError(generation, null);
    if ((live ?? "") !== (previous === null ? "" : String(previous))) throw new GenerationMovedError(generation, null);
    if (epoch !== null && (this.hash.get("epoch") !== String(epoch) || !this.pauseHolds())) throw new PauseLostError();
    if (live !== undefined && !logChanged) {
      for (const [partition, mark] of this.fieldsUnder(`mark:${live}:`)) {
        if (offsetGreater(mark, this.hash.get(`mark:${gs}:${partition}`) ?? "0")) throw new PromoteBehindError();
      }
    }
    this.hash.set("generation", gs);
    this.hash.delete(`building:${gs}`);
    this.hash.delete(`building_until:${gs}`);
    if (epoch !== null) {
      this.hash.set("paused", "0");
      this.hash.set("pause_until", "0");
    }
  }

  async rewind(generation: number): Promise<void> {
    const gs = String(generation);
    if (this.hash.get("generation") !== gs) throw new GenerationMovedError(generation, this.current());
    for (const [partition] of this.fieldsUnder(`mark:${gs}:`)) this.hash.delete(`mark:${gs}:${partition}`);
  }

  async forgetGeneration(generation: number): Promise<void> {
    const gs = String(generation);
    for (const field of [...this.hash.keys()]) {
      if (field === `rv:${gs}` || field === `building:${gs}` || field === `building_until:${gs}` || field.startsWith(`mark:${gs}:`) || field.startsWith(`origin:${gs}:`)) this.hash.delete(field);
    }
  }

  /**
   * mufold_apply_v3's guard (mufold_v1.lua), read from this hash: why an apply from `from` on `partition`
   * would be refused, or null. The memory identity store asks it, as the Lua reads the control hash.
   */
  guardRefusal(generation: number, partition: string, from: bigint): "not_live" | "behind" | null {
    const gs = String(generation);
    if (this.hash.get("generation") !== gs) return "not_live";
    return offsetGreater(from.toString(), this.hash.get(`mark:${gs}:${partition}`) ?? "0") ? "behind" : null;
  }

  /** Lose everything, as a Redis emptied (FLUSHALL, a restart without persistence): for tests of the loss paths. */
  lose(): void {
    this.hash.clear();
    this.acks.clear();
    this.streams.clear();
  }
}
