/**
 * Where a process's CPU goes, for the pipeline bench's in-process fold: its
 * main thread (the fold's JavaScript and V8's stop-the-world pauses) apart
 * from its other threads (V8's platform workers: parallel scavenging,
 * concurrent marking and sweeping, background compilation; libuv's pool:
 * zstd), the main thread's garbage-collection pauses, and the CPU of another
 * process (the broker) meanwhile; and, for the replays, the whole machine's
 * busy cores. Times come from /proc (Linux): elsewhere they are null, never a
 * guess.
 */
import { readFileSync, readdirSync } from "node:fs";
import { PerformanceObserver } from "node:perf_hooks";

/** Clock ticks per second of /proc's utime and stime (USER_HZ: 100 on Linux). */
const USER_HZ = 100;

/** The fields of a /proc stat file after the command's closing parenthesis (state, ppid, ...: field 3 onwards). */
function statFields(path: string): string[] {
  const text = readFileSync(path, "utf8");
  return text.slice(text.lastIndexOf(")") + 2).split(" ");
}

/** utime + stime of a /proc stat line, in seconds. */
function statSeconds(path: string): number {
  const fields = statFields(path);
  return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
}

/** CPU seconds of a process (all its threads), or null when /proc cannot tell. */
export function processCpuSeconds(pid: number): number | null {
  try {
    return statSeconds(`/proc/${pid}/stat`);
  } catch {
    return null;
  }
}

/**
 * CPU seconds (all threads) of each running child of this process with `arg` among its arguments, by pid; null off
 * Linux. A child's time is readable only until it exits (then it goes to this process's cutime, mixed with every
 * other child's): read it while the child still runs.
 */
export function childProcessesCpuSeconds(arg: string): Map<number, number> | null {
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return null;
  }
  const found = new Map<number, number>();
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const fields = statFields(`/proc/${name}/stat`);
      if (Number(fields[1]) !== process.pid) continue;
      if (!readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").includes(arg)) continue;
      found.set(Number(name), (Number(fields[11]) + Number(fields[12])) / USER_HZ);
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return found;
}

/** CPU seconds of this process's main thread and of all its threads together (ended ones included), or null off Linux. */
function ownThreads(): { main: number; all: number } | null {
  try {
    return { main: statSeconds(`/proc/self/task/${process.pid}/stat`), all: statSeconds("/proc/self/stat") };
  } catch {
    return null;
  }
}

/**
 * CPU seconds of this process's live threads by name (/proc/self/task/<tid>/comm), or null off Linux. Node 24 names
 * V8's platform workers `V8Worker`; Node 22 and 24 name libuv's pool threads `libuv-worker`; Node 20 names every
 * thread `node`.
 */
function threadsByName(): Map<string, number> | null {
  try {
    const out = new Map<string, number>();
    for (const tid of readdirSync("/proc/self/task")) {
      try {
        const name = readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim();
        out.set(name, (out.get(name) ?? 0) + statSeconds(`/proc/self/task/${tid}/stat`));
      } catch {
        // the thread ended meanwhile
      }
    }
    return out;
  } catch {
    return null;
  }
}

/** V8's platform workers (the collector's parallel and concurrent work, the optimizing compilers). */
const V8_PLATFORM_THREAD = "V8Worker";
/** libuv's pool (zstd's decompression, file system calls). */
const LIBUV_POOL_THREAD = "libuv-worker";

export interface ThreadSplit {
  /** µs per record on the main thread. */
  mainUs: number;
  /** µs per record on every other thread of the process. */
  otherUs: number;
  /** Of `otherUs`, µs per record on V8's platform workers; null where the runtime does not name them (Node 20, 22). */
  v8PlatformUs: number | null;
  /** Of `otherUs`, µs per record on libuv's pool threads; null where the runtime does not name them (Node 20). */
  libuvPoolUs: number | null;
  /** µs per record of main-thread garbage-collection pauses (scavenges and the pauses of full collections). */
  gcPauseUs: number;
}

/** Start measuring this process; `stop(records)` gives the split per record (null off Linux). */
export function startThreadSplit(): { stop(records: number): ThreadSplit | null } {
  const before = ownThreads();
  const namedBefore = threadsByName();
  let gcMs = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration;
  });
  observer.observe({ entryTypes: ["gc"] });
  return {
    stop(records: number): ThreadSplit | null {
      observer.disconnect();
      const after = ownThreads();
      const namedAfter = threadsByName();
      if (before === null || after === null) return null;
      const main = after.main - before.main;
      const all = after.all - before.all;
      // A named thread's time over the stretch; null when no thread has that name (the runtime does not name it).
      const named = (name: string): number | null => {
        const end = namedAfter?.get(name);
        return end === undefined ? null : ((end - (namedBefore?.get(name) ?? 0)) * 1e6) / records;
      };
      return {
        mainUs: (main * 1e6) / records,
        otherUs: ((all - main) * 1e6) / records,
        v8PlatformUs: named(V8_PLATFORM_THREAD),
        libuvPoolUs: named(LIBUV_POOL_THREAD),
        gcPauseUs: (gcMs * 1e3) / records,
      };
    },
  };
}

/** Busy and total jiffies of the whole machine, and the CPUs they cover (/proc/stat: idle and iowait count as not busy). */
function machineJiffies(): { busy: number; all: number; cpus: number } | null {
  try {
    const lines = readFileSync("/proc/stat", "utf8").split("\n");
    const fields = lines[0]!.trim().split(/\s+/).slice(1).map(Number);
    const all = fields.reduce((a, b) => a + b, 0);
    return { busy: all - fields[3]! - fields[4]!, all, cpus: lines.filter((l) => /^cpu\d/.test(l)).length };
  } catch {
    return null;
  }
}

/**
 * Start measuring the whole machine (every process: the fold or replay, Redis, the broker); `stop()` gives its
 * CPUs and how many of them were busy on average meanwhile (null off Linux). On a machine the measured work
 * saturates, the two are equal: then running more processes of it cannot make it faster.
 */
export function startMachineCpu(): { stop(): { busy: number; cores: number } | null } {
  const before = machineJiffies();
  return {
    stop() {
      const after = machineJiffies();
      if (before === null || after === null || after.all === before.all) return null;
      return { busy: (after.cpus * (after.busy - before.busy)) / (after.all - before.all), cores: after.cpus };
    },
  };
}
