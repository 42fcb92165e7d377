// Read a mufold packet from Redis with ioredis (no mufold dependency), by identity or by scope.
//
//   node read.mjs mur_<64 hex digits>
//   node read.mjs AGENT PROJECT CORPUS SURFACE RETRIEVAL POLICY [REDUCER_VERSION]
//
// REDIS_URL (default redis://127.0.0.1:6379) and MUFOLD_PREFIX (default mufold)
// say where. Prints the packet, canonical JSON on one line, exactly the bytes
// the reducer made. Exits 2 for a usage error (an identity is mur_ and 64
// lowercase hex digits) or when nothing has been folded under the prefix yet,
// as `mufold read` does, and 3 when there is no packet for the identity. Needs only the reader ACL role
// (HGET, FCALL_RO). With the mufold package, the same is
// `(await ProjectionReader.connect()).get(identity)`.
import { createHash } from "node:crypto";
import { Redis } from "ioredis";

// The ten parts of an identity, in the order mufold_read_v1 takes them (IDENTITY_PARTS in src/fold/stored-names.ts).
const PARTS = ["m", "d", "s", "si", "h", "hi", "hl", "c", "ci", "p"];
const IDENTITY = /^mur_[0-9a-f]{64}$/;
const EXIT_USAGE = 2;
const EXIT_UNKNOWN = 3;
const EXIT_NO_GENERATION = 2;

/** Canonical JSON of strings and objects (all the context holds): keys sorted, no spaces. */
function canonicalJson(value) {
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The reducer identity (mur_…): sha256 of the canonical JSON of the context. */
function identity(agent, project, corpus, surface, retrieval, policy, reducerVersion = "memory_utility_reducer_v0") {
  const context = {
    schema_version: "memory_utility_projection_v0",
    scope: { agent_id: agent, project_id: project, corpus_id: corpus, surface_id: surface },
    retrieval_snapshot_ref: retrieval,
    policy_snapshot_ref: policy,
    reducer_version: reducerVersion,
  };
  return "mur_" + createHash("sha256").update(canonicalJson(context), "utf8").digest("hex");
}

/** The live generation (a number), or null when nothing has been folded under the prefix. */
async function liveGeneration(redis, prefix) {
  const generation = await redis.hget(`${prefix}:control`, "generation");
  return generation === null ? null : Number(generation);
}

/** The packet bytes in a generation, or null. */
async function readPacket(redis, prefix, generation, ident) {
  const keys = PARTS.map((part) => `${prefix}:g${generation}:{${ident}}:${part}`);
  return redis.callBuffer("FCALL_RO", "mufold_read_v1", keys.length, ...keys);
}

const args = process.argv.slice(2);
if (args.length !== 1 && args.length !== 6 && args.length !== 7) {
  process.stderr.write("usage: node read.mjs mur_… | AGENT PROJECT CORPUS SURFACE RETRIEVAL POLICY [REDUCER_VERSION]\n");
  process.exit(EXIT_USAGE);
}
if (args.length === 1 && !IDENTITY.test(args[0])) {
  process.stderr.write(`invalid identity ${JSON.stringify(args[0])}: must be mur_ followed by 64 lowercase hex digits\n`);
  process.exit(EXIT_USAGE);
}
const ident = args.length === 1 ? args[0] : identity(...args);
const prefix = process.env.MUFOLD_PREFIX ?? "mufold";
const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", { enableReadyCheck: false });
try {
  const generation = await liveGeneration(redis, prefix);
  if (generation === null) {
    process.stderr.write(`no mufold generation in Redis under prefix ${prefix}: nothing has been folded yet\n`);
    process.exitCode = EXIT_NO_GENERATION;
  } else {
    const packet = await readPacket(redis, prefix, generation, ident);
    if (packet === null) {
      process.stderr.write(`no projection for identity ${ident}\n`);
      process.exitCode = EXIT_UNKNOWN;
    } else {
      process.stdout.write(Buffer.concat([packet, Buffer.from("\n")]));
    }
  }
} finally {
  await redis.quit();
}
