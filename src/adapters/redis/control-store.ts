/**
 * The ControlStore port on Redis: the control hash `<prefix>:control` through
 * the functions of mufold_control_v1.lua (which lists their arguments and
 * return codes; errors.ts maps the codes onto the port's errors), and the
 * pause acknowledgements `<prefix>:control:acks`. Every call names one key,
 * so it is atomic on one node and on a cluster alike; a seal with change
 * entries also names the change stream, on one node only.
 */
import type { Redis, Cluster } from "ioredis";
import type { ChangeEntries, ControlState, ControlStore } from "../../fold/control-store.js";
import { CONTROL_FIELDS, acksKey, changesKey, controlKey } from "./keys.js";
import { isCluster } from "./connect.js";
import { CONTROL_FUNCTIONS } from "./functions.js";
import { classifyRedisError, controlResult } from "./errors.js";
import { FunctionCaller, type FunctionCommand } from "./function-call.js";

export class RedisControlStore implements ControlStore {
  private readonly functions: FunctionCaller;

  constructor(
    readonly redis: Redis | Cluster,
    readonly prefix: string,
  ) {
    this.functions = new FunctionCaller(redis);
  }

  private call(command: FunctionCommand, fn: string, args: string[]): Promise<unknown> {
    return this.functions.call(command, fn, [controlKey(this.prefix)], args);
  }

  async state(): Promise<ControlState> {
    const [generation, paused, epoch, rv] = (await this.call("FCALL_RO", CONTROL_FUNCTIONS.state, [])) as [number, number, number, string];
    return { generation: generation < 0 ? null : generation, paused: paused === 1, epoch, reducerVersion: rv === "" ? null : rv };
  }

  /** A plain HGET (no function call, no TIME): what a reader's ACL role may run. */
  async liveGeneration(): Promise<number | null> {
    const g = await this.redis.hget(controlKey(this.prefix), CONTROL_FIELDS.generation);
    return g === null ? null : Number(g);
  }

  async initGeneration(reducerVersion: string): Promise<{ generation: number; reducerVersion: string }> {
    const [generation, rv] = (await this.call("FCALL", CONTROL_FUNCTIONS.init, [reducerVersion])) as [number, string];
    return { generation, reducerVersion: rv };
  }

  async allocateGeneration(reducerVersion: string, buildToken: string, leaseMs: number): Promise<number> {
    return Number(await this.call("FCALL", CONTROL_FUNCTIONS.allocate, [reducerVersion, buildToken, String(leaseMs)]));
  }

  async renewBuild(generation: number, buildToken: string, leaseMs: number): Promise<void> {
    const code = Number(await this.call("FCALL", CONTROL_FUNCTIONS.renewBuild, [String(generation), buildToken, String(leaseMs)]));
    controlResult(code, { generation });
  }

  async buildingGenerations(): Promise<Set<number>> {
    const gens = (await this.call("FCALL_RO", CONTROL_FUNCTIONS.building, [])) as string[];
    return new Set(gens.map(Number));
  }

  async seal(generation: number, mode: string, marks: ReadonlyMap<string, bigint>, firstOffsets: ReadonlyMap<string, bigint> = new Map(), changes?: ChangeEntries): Promise<void> {
    const args: string[] = [String(generation), mode];
    const keys = [controlKey(this.prefix)];
    let fn: string = CONTROL_FUNCTIONS.seal;
    if (changes !== undefined && changes.entries.length > 0) {
      // One node: the entries go in the seal's call (one round trip, and appended only to a seal that holds). A
      // cluster keeps the stream in another slot: appended first, then sealed (a refused seal's batch is applied and
      // announced again: the feed is at least once).
      if (isCluster(this.redis)) {
        await this.append(generation, changes);
      } else {
        fn = CONTROL_FUNCTIONS.sealChanges;
        keys.push(changesKey(this.prefix, generation));
        args.push(String(changes.maxLen), String(changes.entries.length));
        for (const entry of changes.entries) args.push(String(entry.length), ...entry);
      }
    }
    for (const [field, next] of marks) args.push(field, next.toString(), firstOffsets.get(field)?.toString() ?? "");
    const [code, current] = (await this.functions.call("FCALL", fn, keys, args)) as [number, number];
    // The Lua does not say which partition started past its mark: a one-partition seal's is known.
    const partition = marks.size === 1 ? [...marks.keys()][0] : undefined;
    controlResult(code, { generation, current, partition, from: partition === undefined ? undefined : firstOffsets.get(partition) });
  }

  /** XADD … MAXLEN ~ of each entry, in one pipeline. */
  private async append(generation: number, changes: ChangeEntries): Promise<void> {
    const key = changesKey(this.prefix, generation);
    const pipeline = this.redis.pipeline();
    for (const fields of changes.entries) pipeline.xadd(key, "MAXLEN", "~", changes.maxLen, "*", ...fields);
    for (const [err] of (await pipeline.exec()) ?? []) if (err) throw classifyRedisError(err);
  }

  async checkOrigin(generation: number, mode: string, partition: string, fingerprint: string): Promise<void> {
    const [code, current] = (await this.call("FCALL", CONTROL_FUNCTIONS.origin, [String(generation), mode, partition, fingerprint])) as [number, number];
    controlResult(code, { generation, partition, current });
  }

  async generationFields(generation: number, kind: "mark" | "origin"): Promise<Map<string, string>> {
    const all = await this.redis.hgetall(controlKey(this.prefix));
    const head = `${kind}:${generation}:`; // the control library's field names
    const out = new Map<string, string>();
    for (const [field, value] of Object.entries(all)) if (field.startsWith(head)) out.set(field.slice(head.length), value);
    return out;
  }

  async pause(epoch: number | null, leaseMs: number): Promise<number> {
    const [code, held] = (await this.call("FCALL", CONTROL_FUNCTIONS.pause, [epoch === null ? "" : String(epoch), String(leaseMs)])) as [number, number];
    controlResult(code, { generation: 0 });
    return held;
  }

  async unpause(epoch: number): Promise<void> {
    await this.call("FCALL", CONTROL_FUNCTIONS.unpause, [String(epoch)]);
  }

  async ackPause(member: string, epoch: number): Promise<void> {
    await this.redis.hset(acksKey(this.prefix), member, String(epoch));
  }

  async clearPauseAcks(): Promise<void> {
    await this.redis.del(acksKey(this.prefix));
  }

  async pauseAcks(): Promise<Record<string, string>> {
    return this.redis.hgetall(acksKey(this.prefix));
  }

  async promote(generation: number, buildToken: string, epoch: number | null, previous: number | null, logChanged = false): Promise<void> {
    const args = [String(generation), buildToken, epoch === null ? "" : String(epoch), previous === null ? "" : String(previous), logChanged ? "1" : "0"];
    const [code] = (await this.call("FCALL", CONTROL_FUNCTIONS.promote, args)) as [number];
    controlResult(code, { generation });
  }

  async rewind(generation: number): Promise<void> {
    const [code, current] = (await this.call("FCALL", CONTROL_FUNCTIONS.rewind, [String(generation)])) as [number, number];
    controlResult(code, { generation, current });
  }

  async forgetGeneration(generation: number): Promise<void> {
    await this.call("FCALL", CONTROL_FUNCTIONS.forget, [String(generation)]);
  }
}
