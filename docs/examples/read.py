"""Read a mufold packet from Redis with redis-py, by identity or by scope.

    python read.py mur_<64 hex digits>
    python read.py AGENT PROJECT CORPUS SURFACE RETRIEVAL POLICY [REDUCER_VERSION]

REDIS_URL (default redis://127.0.0.1:6379) and MUFOLD_PREFIX (default mufold)
say where. Prints the packet, canonical JSON on one line, exactly the bytes
the reducer made. Exits 2 for a usage error (an identity is mur_ and 64
lowercase hex digits) or when nothing has been folded under the prefix yet,
as `mufold read` does, and 3 when there is no packet for the identity. Needs only the reader ACL role
(HGET, FCALL_RO). Tested by test/integration/readback-snippets.int.spec.ts
(redis==6.4.0).
"""
import hashlib
import json
import os
import re
import sys

import redis

# The ten parts of an identity, in the order mufold_read_v1 takes them (IDENTITY_PARTS in src/fold/stored-names.ts).
PARTS = ("m", "d", "s", "si", "h", "hi", "hl", "c", "ci", "p")
IDENTITY = re.compile(r"mur_[0-9a-f]{64}")
EXIT_USAGE, EXIT_UNKNOWN, EXIT_NO_GENERATION = 2, 3, 2
USAGE = "usage: python read.py mur_... | AGENT PROJECT CORPUS SURFACE RETRIEVAL POLICY [REDUCER_VERSION]"


def canonical_json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def identity(agent, project, corpus, surface, retrieval, policy, reducer_version="memory_utility_reducer_v0"):
    """The reducer identity (mur_...): sha256 of the canonical JSON of the context."""
    context = {
        "schema_version": "memory_utility_projection_v0",
        "scope": {"agent_id": agent, "project_id": project, "corpus_id": corpus, "surface_id": surface},
        "retrieval_snapshot_ref": retrieval,
        "policy_snapshot_ref": policy,
        "reducer_version": reducer_version,
    }
    return "mur_" + hashlib.sha256(canonical_json(context).encode("utf-8")).hexdigest()


def live_generation(client, prefix):
    """The live generation (an int), or None when nothing has been folded under the prefix."""
    generation = client.hget(f"{prefix}:control", "generation")
    return None if generation is None else int(generation)


def read_packet(client, prefix, generation, ident):
    """The packet bytes in a generation, or None."""
    keys = [f"{prefix}:g{generation}:{{{ident}}}:{part}" for part in PARTS]
    return client.fcall_ro("mufold_read_v1", len(keys), *keys)


def main(args):
    if len(args) == 1:
        ident = args[0]
        if not IDENTITY.fullmatch(ident):
            print(f"invalid identity {json.dumps(ident, ensure_ascii=False)}: must be mur_ followed by 64 lowercase hex digits", file=sys.stderr)
            return EXIT_USAGE
    elif len(args) in (6, 7):
        ident = identity(*args)
    else:
        print(USAGE, file=sys.stderr)
        return EXIT_USAGE
    prefix = os.environ.get("MUFOLD_PREFIX", "mufold")
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"))
    generation = live_generation(client, prefix)
    if generation is None:
        print(f"no mufold generation in Redis under prefix {prefix}: nothing has been folded yet", file=sys.stderr)
        return EXIT_NO_GENERATION
    packet = read_packet(client, prefix, generation, ident)
    if packet is None:
        print(f"no projection for identity {ident}", file=sys.stderr)
        return EXIT_UNKNOWN
    sys.stdout.buffer.write(packet + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
