"""Read a mufold packet from Redis with redis-py, by identity or by scope.

    python read.py mur_<64 hex digits>
    python read.py AGENT PROJECT CORPUS SURFACE RETRIEVAL POLICY [REDUCER_VERSION]

REDIS_URL (default redis://127.0.0.1:6379) and MUFOLD_PREFIX (default mufold)
say where. Prints the packet, canonical JSON on one line, exactly the bytes
the reducer made; exits 3 when there is no packet for the identity. Needs only
the reader ACL role (HGET, FCALL_RO). Tested by
test/integration/readback-snippets.int.spec.ts (redis==6.4.0).
"""
import hashlib
import json
import os
import sys

import redis

# The ten parts of an identity, in the order mufold_read_v1 takes them (src/fold/keys.ts).
PARTS = ("m", "d", "s", "si", "h", "hi", "hl", "c", "ci", "p")


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


def read_packet(client, prefix, ident):
    """The packet bytes in the live generation, or None."""
    generation = client.hget(f"{prefix}:control", "generation")
    if generation is None:
        raise SystemExit("no mufold generation in Redis: nothing has been folded yet")
    keys = [f"{prefix}:g{int(generation)}:{{{ident}}}:{part}" for part in PARTS]
    return client.fcall_ro("mufold_read_v1", len(keys), *keys)


def main(args):
    if len(args) == 1:
        ident = args[0]
    elif len(args) in (6, 7):
        ident = identity(*args)
    else:
        raise SystemExit(__doc__)
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"))
    packet = read_packet(client, os.environ.get("MUFOLD_PREFIX", "mufold"), ident)
    if packet is None:
        print(f"no projection for identity {ident}", file=sys.stderr)
        return 3
    sys.stdout.buffer.write(packet + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
