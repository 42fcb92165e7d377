/** Every command's flags and `--help` text, in one place (docs/using.md "Commands" mirrors them). */
import { FINGERPRINT_SETTINGS, SETTINGS, settingFlags } from "../config/settings.js";
import type { CommandSpec, FlagSpec } from "./args.js";

const str: FlagSpec = { type: "string" };
const bool: FlagSpec = { type: "boolean" };

/** One line per setting: flag, environment variable, default, meaning; * marks the fingerprinted ones. */
function settingsHelp(): string {
  const rows = Object.values(SETTINGS).map((s) => {
    const name = "flag" in s ? `--${s.flag} / ${s.env}` : s.env;
    const def = s.default === "" ? "" : ` [${s.default}]`;
    const mark = "fingerprint" in s ? " *" : "";
    return `  ${name}${def}${mark}\n      ${s.help}`;
  });
  return (
    `Settings (flag / environment variable [default]; the flag wins; * in the fingerprint of mufold config explain):\n` +
    `${rows.join("\n")}\n`
  );
}

/** Words of `text` in lines of at most `width` characters. */
function wrap(text: string, width: number): string {
  const lines: string[] = [];
  for (const word of text.split(" ")) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last]!.length + 1 + word.length <= width) lines[last] += ` ${word}`;
    else lines.push(word);
  }
  return lines.join("\n");
}

const EXITS_CONNECTING = "Exit 1 when Kafka or Redis cannot be reached at start (one line naming it, within --connect-timeout-ms), 2 for a usage or settings error.";

function streamSpec(name: string, synopsis: string, about: string, flags: Record<string, FlagSpec>): CommandSpec {
  return {
    name,
    flags: { ...settingFlags(), ...flags },
    usage: `usage: mufold ${name} ${synopsis}[setting flags]\n\n${about.trim()}\n\n${settingsHelp()}`,
  };
}

export const PRODUCE = streamSpec(
  "produce",
  "[--input FILE|-] [--raw] ",
  `
Validate observations (a JSON array or JSON lines) and send the valid ones,
keyed by scope (zstd, idempotent, acks=all). Each invalid one is reported on
stderr with its reason code.

  --input FILE|-   the observations; - (the default) reads stdin
  --raw            send each non-empty line as is, unvalidated (to exercise the DLQ)

Exit 0 all sent, 1 some were invalid (the valid ones are sent). ${EXITS_CONNECTING}`,
  { input: str, raw: bool },
);

export const SIMULATE = streamSpec(
  "simulate",
  "[--agents N] [--observations N] [--scopes-per-agent N] [--snapshot-every N] [--duplicate-rate R] [--conflict-rate R] [--seed S] [--rate R] [--malformed N] ",
  `
Generate deterministic load from many agents with the contract's builder,
retries and changed judgments mixed in, and send it.

  --agents N            agents (at least 1) [50]
  --observations N      observations per agent (at least 0) [200]
  --scopes-per-agent N  scopes of each agent (at least 1) [1]
  --snapshot-every N    observations between snapshot rotations (at least 1) [100]
  --duplicate-rate R    share of retries of an earlier observation, 0 to 1 [0.1]
  --conflict-rate R     share of changed judgments of an earlier observation, 0 to 1 [0.01]
  --seed S              random seed, 0 to 4294967295 [1]
  --rate R              records per second, 0 for as fast as possible [0]
  --malformed N         malformed records to send raw as well (at least 0) [0]

${EXITS_CONNECTING}`,
  {
    agents: str,
    observations: str,
    "scopes-per-agent": str,
    "snapshot-every": str,
    "duplicate-rate": str,
    "conflict-rate": str,
    seed: str,
    rate: str,
    malformed: str,
  },
);

export const FOLD = streamSpec(
  "fold",
  "[--http-port P] [--http-host H] ",
  `
Join the consumer group and fold the topic into Redis until SIGTERM/SIGINT,
then finish or abandon the batch and leave the group. Logs JSON lines on
stderr; a fatal error is one JSON line too.

  --http-port P   also serve the HTTP API, /metrics, /healthz and /readyz on port P (MUFOLD_HTTP_PORT)
  --http-host H   the address to listen on [127.0.0.1] (MUFOLD_HTTP_HOST)

Exit 0 after a signal, 1 when the consumer stopped on an error. ${EXITS_CONNECTING}`,
  {},
);

export const READ = streamSpec(
  "read",
  "(--identity mur_… | --agent A --project P --corpus C --surface S --retrieval R --policy P | --list) [--as-of-offset P:O[,P:O…] | --as-of-time ISO8601] [--validate] ",
  `
Print one projection packet (canonical JSON), or the list of identities.

  --identity mur_…   the reducer identity (mur_ and 64 lowercase hex digits)
  --agent A --project P --corpus C --surface S --retrieval R --policy P
                     or the scope and snapshot refs it is computed from (all six)
  --list             or list the identities of the live generation
  --validate         run the fail-closed readback validator on the packet first
  --as-of-offset PARTITION:OFFSET[,PARTITION:OFFSET…]
                     the projection as of that point of the topic: the reducer
                     over the identity's records at or before the offset on each
                     named partition (partitions not named contribute none)
  --as-of-time ISO8601
                     or as of a time: the reducer over the identity's records
                     whose Kafka timestamp is at or before it (e.g.
                     2026-12-05T09:30:00Z; the offset is required)

Exit 0 printed, 1 the packet failed --validate, 3 no projection for the
identity, 4 as_of_not_available (the point is past the live generation's
marks or later than now, its stored state cannot rebuild it, or the topic is
no longer the log it folded, checked with Kafka: the message names what is
available). ${EXITS_CONNECTING}`,
  { identity: str, agent: str, project: str, corpus: str, surface: str, retrieval: str, policy: str, list: bool, validate: bool, "as-of-offset": str, "as-of-time": str },
);

export const EXPLAIN = streamSpec(
  "explain",
  "--identity mur_… [--as-of-offset P:O[,P:O…] | --as-of-time ISO8601] [--json] ",
  `
List every delivery that reached an identity, in the order the fold applied
it: partition, offset, Kafka timestamp, observation id, what the fold made
of it (accepted, duplicate, conflicting, or rejected with the packet's
reason) and the parts of the packet it feeds (subject and its label
summary, history entry, conflict entry). The decisions' counts equal the
packet's counters, printed below the table.

  --identity mur_…   the reducer identity
  --as-of-offset PARTITION:OFFSET[,PARTITION:OFFSET…] | --as-of-time ISO8601
                     only the deliveries up to that point (as mufold read)
  --json             one JSON object: identity, generation, version, status,
                     counts, not_indexed, as_of, and deliveries (one element
                     per delivery, with partition, offset, timestamp,
                     observation_id, decision, reason, repeat and feeds)

Exit 0 printed, 3 no projection for the identity, 4 as_of_not_available
(also when the topic, asked through Kafka, is no longer the log the live
generation folded: truncated, or deleted and recreated). ${EXITS_CONNECTING}`,
  { identity: str, "as-of-offset": str, "as-of-time": str, json: bool },
);

export const DIFF = streamSpec(
  "diff",
  "--identity mur_… [--from POINT] [--to POINT] [--json] ",
  `
Show what changed in an identity's packet between two points of its past
(status, counters, subjects field by field, conflicts) and the deliveries
between them that changed it.

  --identity mur_…   the reducer identity
  --from POINT       PARTITION:OFFSET[,PARTITION:OFFSET…] or an ISO 8601 time
                     with its offset (default: before the first delivery)
  --to POINT         the same (default: every delivery, the live packet)
  --json             one JSON object instead of the text

Exit 0 printed, 3 no projection for the identity, 4 as_of_not_available
(also when the topic is no longer the log the live generation folded).
${EXITS_CONNECTING}`,
  { identity: str, from: str, to: str, json: bool },
);

export const REPLAY = streamSpec(
  "replay",
  "[--verify [--to-end] [--report FILE.html]] [--promote] [--keep-shadow] [--drop-after SECONDS] [--change-reducer-version] [--workers N] [--chunk-bytes BYTES] ",
  `
Rebuild every projection from offset 0 into a shadow generation. Prints a
JSON summary on stdout, a progress bar on a terminal, JSON log lines on stderr.

  --verify              compare the rebuilt projections with the live ones: the
                        rebuild reads every partition to the live generation's
                        mark or the fold group's committed offset, whichever is
                        further; a live mark behind that is behind_log (the
                        records it lacks, per partition) and never verifies
  --to-end              with --verify: hold the live generation to the log's end
                        (as the replay starts), not only to what was committed
  --report FILE.html    with --verify: also write a self-contained page (summary,
                        each identity's status, the first differing bytes of
                        every mismatch) when the replay finishes
  --promote             make the rebuilt generation live
  --keep-shadow         keep the shadow generation when not promoting
  --drop-after SECONDS  after a promote, drop the old generation this much later [5]
  --change-reducer-version
                        allow a promote whose reducer version differs from the live one
  --workers N           split the partitions into N shares rebuilt at once into
                        the same generation: this process reads one, N-1 worker
                        processes the others (at most one per partition); this
                        process then seals, verifies and promotes [1]
  --chunk-bytes BYTES   records a reader gathers before it applies them and
                        stops fetching: bounds each reader's memory (at least
                        65536) [8388608]

Exit 0 when nothing differs (with --verify: every identity compared and
equal, and no partition behind_log), 1 otherwise or when Kafka or Redis cannot be reached at start, 2 for a
usage or settings error or a topic that does not exist.`,
  { verify: bool, "to-end": bool, report: str, promote: bool, "keep-shadow": bool, "drop-after": str, "change-reducer-version": bool, workers: str, "chunk-bytes": str },
);

/**
 * How `replay --workers` starts each worker process: `mufold replay` with this one argument and an IPC channel.
 * Not a flag of REPLAY, so the help, which lists every flag the parser accepts, need not show it.
 */
export const REPLAY_WORKER_ARG = "--internal-worker";

export const STATUS = streamSpec(
  "status",
  "[--json] ",
  `
Report what the live generation holds: its number and reducer version, each
partition's mark (next offset folded) against the fold group's committed
offset and the log's end, behind_log (committed − mark, when the mark is
behind) and lag (end − mark), the replays being built, whether the Redis
function libraries are loaded, and a verdict with its cause:

  waiting_for_setup  the function libraries (or the topic) are missing: run mufold setup
  rebuilding         no live generation, or one without marks while the group
                     has committed offsets: the projections are rebuilt from offset 0
  behind_log         a mark is behind the group's committed offset: Redis went
                     back in time, or the group's offsets were moved past it
  ready              every mark is at or past the committed offset

  --json   one JSON object instead of the table

Exit 0 whatever the verdict (it reports). ${EXITS_CONNECTING}`,
  { json: bool },
);

export const SERVE = streamSpec(
  "serve",
  "[--port P] [--host H] ",
  `
Serve the read-only HTTP API over the live generation: /v1/projections,
/v1/identities, /metrics, /healthz, /readyz. Starts even when Redis is down
(/readyz answers 503 until it is back); stops on SIGTERM/SIGINT.

  --port P   port to listen on [8080] (or --http-port, MUFOLD_HTTP_PORT)
  --host H   address to listen on [127.0.0.1] (or --http-host, MUFOLD_HTTP_HOST)

Exit 0 after a signal, 2 for a usage or settings error, a port it cannot
listen on, or Redis refusing the credentials.`,
  { port: str, host: str },
);

export const DEMO = streamSpec(
  "demo",
  "",
  `
The main job end to end on Kafka and Redis: simulate 50 agents (10,000
observations, 8 malformed records), fold with two worker processes, replay
--verify, and print a table. Uses a fresh topic, group and Redis prefix.

Exit 0 only when the replay found 0 mismatches. ${EXITS_CONNECTING}`,
  {},
);

export const SETUP = streamSpec(
  "setup",
  "[--skip-topics] ",
  `
The admin step of a deployment: run it once before the first fold, after each
upgrade, and whenever Redis lost its functions (a restart without persistence,
FLUSHALL). Run it as a Redis admin: the fold and the replay may not load Lua
and refuse to start without it (docs/security.md).

  1. Refuse a Redis whose maxmemory-policy may evict mufold's keys (unless
     --allow-evicting-policy); warn when it persists nothing.
  2. Load mufold's Redis Function libraries (mufold_v1, mufold_control_v1) on
     every master, and check them back.
  3. Create the observation topic, its DLQ and the proposals topic (when
     MUFOLD_PROPOSALS_TOPIC is set) if missing, with --partitions,
     --replication-factor and infinite retention. Existing topics are left as
     they are.

  --skip-topics   steps 1 and 2 only: no Kafka

Idempotent. Prints a JSON summary. Exit 0 done, 2 for a usage or settings
error or a refused Redis, 1 when Kafka or Redis cannot be reached.`,
  { "skip-topics": bool },
);

export const CONFIG_EXPLAIN = streamSpec(
  "config explain",
  "",
  `
Print the effective settings as a content-free JSON receipt
(mufold_config_receipt_v1): every setting below with its value and source
(flag, env, default), credentials only as present/absent, and a fingerprint.
Connects nowhere.

The fingerprint covers the settings that change what mufold writes to Kafka
or Redis, or where (marked * below, listed in the receipt's "fingerprinted"):
${wrap(FINGERPRINT_SETTINGS.join(", ") + ".", 76)}

Hosts with one fingerprint write the same bytes to the same places; logging,
timeouts, retry budgets, memory and concurrency, HTTP, TLS and credentials
may differ between them.

Exit 0, or 2 with one line naming an invalid setting.`,
  {},
);

export const UTILITY_PROJECT: CommandSpec = {
  name: "reward-memory utility-project",
  flags: { input: str, format: str },
  abbreviations: true,
  usage: `usage: mufold reward-memory utility-project --input FILE|- [--format json]

The embedded reducer, as the reference CLI (loopx reward-memory utility-project
--format json): reduce {observations, scope, retrieval_snapshot_ref,
policy_snapshot_ref, reducer_version?, previous_projection?} into a projection
packet, printed as canonical JSON on one line. No Kafka, no Redis.

  --input FILE|-   the request (strict UTF-8; - reads stdin)
  --format json    the only format

Exit 0 for an accepted packet, 2 for a rejected packet or an unusable request.
`,
};

export const VALIDATE: CommandSpec = {
  name: "reward-memory validate",
  flags: { input: str },
  abbreviations: true,
  usage: `usage: mufold reward-memory validate --input FILE|-

Run the fail-closed readback validator on a projection packet.

  --input FILE|-   the packet (- reads stdin)

Exit 0 valid, 1 invalid (with the reason), 2 unusable input.
`,
};

export const MAIN_USAGE = `usage: mufold <command> [flags]    (mufold <command> --help for one command)

  mufold reward-memory utility-project --input FILE|- [--format json]
                          the embedded reducer (no Kafka, no Redis), as the reference CLI
  mufold reward-memory validate --input FILE|-
                          the fail-closed readback validator
  mufold produce [--input FILE|-] [--raw]
                          validate and send observations (JSON array or JSON lines)
  mufold simulate [--agents N] [--observations N] [--scopes-per-agent N] [--snapshot-every N] [--duplicate-rate R]
                  [--conflict-rate R] [--seed S] [--rate R] [--malformed N]
                          send deterministic load from many agents
  mufold fold [--http-port P]
                          fold the topic into Redis until SIGTERM/SIGINT
  mufold read (--identity mur_… | --agent A --project P --corpus C --surface S --retrieval R --policy P | --list)
              [--as-of-offset P:O[,P:O…] | --as-of-time ISO8601] [--validate]
                          print one packet
  mufold explain --identity mur_… [--as-of-offset P:O[,P:O…] | --as-of-time ISO8601] [--json]
                          every delivery of an identity: what the fold made of it, what it feeds
  mufold diff --identity mur_… [--from POINT] [--to POINT] [--json]
                          what changed between two points of an identity's past, and why
  mufold replay [--verify [--to-end] [--report FILE.html]] [--promote] [--keep-shadow] [--drop-after SECONDS]
                [--change-reducer-version] [--workers N] [--chunk-bytes BYTES]
                          rebuild every projection from offset 0
  mufold status [--json]  the live generation's marks against the group's offsets and the log, and a verdict
  mufold serve [--port 8080] [--host 127.0.0.1]
                          the read-only HTTP API, /metrics, /healthz, /readyz
  mufold setup [--skip-topics]
                          admin, once: load the Redis functions, create the topics
  mufold config explain   the effective settings as a JSON receipt (no secrets)
  mufold demo             simulate, fold with two workers, replay --verify
  mufold --version        the version

Every command but reward-memory also takes the setting flags (mufold fold --help lists them).
A closed standard output (| head) ends a command quietly with exit 141.
`;

/** `mufold reward-memory`'s subcommands (utility-reduce is utility-project's other name). */
export const REWARD_MEMORY_SUBCOMMANDS = ["utility-project", "utility-reduce", "validate"] as const;

/** `mufold reward-memory`: the reference CLI's commands, as `reward-memory` runs them. */
export const REWARD_MEMORY_USAGE = `usage:
  mufold reward-memory utility-project --input FILE|- [--format json]
      Reduce {observations, scope, retrieval_snapshot_ref, policy_snapshot_ref,
      reducer_version?, previous_projection?} into a projection packet (canonical JSON).
      Exit 0 for an accepted packet, 2 for a rejected packet or an unusable request.
  mufold reward-memory validate --input FILE|-
      Run the fail-closed readback validator. Exit 0 valid, 1 invalid, 2 unusable input.
`;
