"""A foreign consumer of mufold's projections: redis-py reads every packet of a
prefix straight from Redis, and the reference (loopx) validates each one.

Run with the venv python of scripts/setup-foreign.sh:

    python read_validate.py --redis-url redis://127.0.0.1:6379 --prefix mufold

As docs/using.md tells any client: N = HGET <prefix>:control generation, the
identities are SSCAN <prefix>:g<N>:index, and a packet is
FCALL_RO mufold_read_v1 10 <prefix>:g<N>:{<identity>}:<part> for the ten parts.
Each packet goes through
loopx.capabilities.reward_memory.utility_reducer.validate_reward_memory_utility_projection(json.loads(packet)).
The identity is also recomputed from the packet (mur_ + sha256 of the canonical
JSON of its context) and compared with the indexed one.

stdout: one JSON line per identity {"identity", "ok", "error"?, "identity_matches",
"packet_b64"}, then {"summary": {"generation", "identities", "accepted",
"rejected", "control_rejected"}}; "control_rejected" says the validator
refused a tampered copy of the first packet (it is not a rubber stamp).
Exit 0 when every packet was accepted, 1 otherwise, 2 when nothing can be read.
"""

from __future__ import annotations

import argparse
import base64
import copy
import hashlib
import json
import sys

import redis
from loopx.capabilities.reward_memory.utility_reducer import validate_reward_memory_utility_projection

PARTS = ("m", "d", "s", "si", "h", "hi", "hl", "c", "ci", "p")


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def identity_of(packet: dict) -> str:
    context = {
        "policy_snapshot_ref": packet["policy_snapshot_ref"],
        "reducer_version": packet["reducer_version"],
        "retrieval_snapshot_ref": packet["retrieval_snapshot_ref"],
        "schema_version": "memory_utility_projection_v0",
        "scope": packet["scope"],
    }
    return "mur_" + hashlib.sha256(canonical(context).encode("utf-8")).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--redis-url", required=True)
    ap.add_argument("--prefix", required=True)
    args = ap.parse_args()

    r = redis.Redis.from_url(args.redis_url)
    raw_generation = r.hget(f"{args.prefix}:control", "generation")
    if raw_generation is None:
        print(f"read_validate: no {args.prefix}:control generation in Redis", file=sys.stderr)
        return 2
    gen = int(raw_generation)
    identities = sorted(m.decode("utf-8") for m in r.sscan_iter(f"{args.prefix}:g{gen}:index", count=1000))

    out = sys.stdout
    accepted = rejected = 0
    control_rejected = None
    for ident in identities:
        keys = [f"{args.prefix}:g{gen}:{{{ident}}}:{part}" for part in PARTS]
        packet = r.fcall_ro("mufold_read_v1", len(keys), *keys)
        line: dict = {"identity": ident}
        if not isinstance(packet, bytes):
            line.update(ok=False, error=f"FCALL_RO returned {type(packet).__name__}: {packet!r}", identity_matches=False, packet_b64=None)
            rejected += 1
        else:
            line["packet_b64"] = base64.b64encode(packet).decode("ascii")
            try:
                doc = json.loads(packet)
                validate_reward_memory_utility_projection(doc)
                line["ok"] = True
                accepted += 1
            except Exception as exc:  # the validator fails closed with ValueError/TypeError/...
                line.update(ok=False, error=f"{type(exc).__name__}: {exc}")
                rejected += 1
                doc = None
            line["identity_matches"] = isinstance(doc, dict) and identity_of(doc) == ident
            if control_rejected is None and isinstance(doc, dict):
                tampered = copy.deepcopy(doc)
                tampered["accepted_observation_count"] = tampered["accepted_observation_count"] + 1
                try:
                    validate_reward_memory_utility_projection(tampered)
                    control_rejected = False
                except Exception:
                    control_rejected = True
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
    summary = {"generation": gen, "identities": len(identities), "accepted": accepted, "rejected": rejected, "control_rejected": control_rejected}
    out.write(json.dumps({"summary": summary}) + "\n")
    out.flush()
    return 0 if rejected == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
