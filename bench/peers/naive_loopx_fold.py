"""The naive peer of mufold's fold (issue 35): what a user would write instead.

A Python consumer (confluent-kafka) reads the observation topic from offset 0;
for every consumed batch it recomputes each touched reducer identity with the
reference, PyPI loopx 2.1.1, over ALL of that identity's deliveries so far
(reduce_reward_memory_utility_observations, as the docs tell a caller: "pass the
complete observation stream on every invocation"), and SETs the packet, the
canonical JSON bytes mufold stores too, under <prefix>:naive:{<identity>} with
redis-py (one pipeline per batch). No incremental state, no cache of packets:
the peer keeps every delivery in memory and re-reduces.

Run with the venv python of scripts/setup-foreign.sh (loopx, redis-py,
confluent-kafka):

    python bench/peers/naive_loopx_fold.py --brokers 127.0.0.1:9092 --topic T \
        --group G --redis-url redis://127.0.0.1:6379 --prefix P \
        [--reducer-version memory_utility_reducer_v0] [--records N] [--max-value-bytes 65536] [--json-out FILE]

It stops after N records (default: no cap), or once every partition has
reached the end offset it had when the peer started, whichever comes first.
A record is accepted as the fold accepts one: a UTF-8 JSON value (of at most
--max-value-bytes) that loopx's
validate_reward_memory_utility_observation accepts, a `schema` header (if any)
of memory_utility_observation_v0, and a key equal to the observation's scope
key agent_id/project_id/corpus_id/surface_id. Anything else is skipped (and
counted), as the fold sends it to its DLQ.

The clock runs from subscribe (the group join included, as the fold's is) to
the last batch's Redis pipeline. The result (stdout, and --json-out FILE) is
one JSON object: records, skipped, identities, seconds, records_per_s,
batches, reduce_seconds, redis_seconds, deliveries_reduced (the deliveries all
the recomputations went over), starts and positions (per partition, the first
offset and the next one after the last record consumed: exactly the records
consumed, for a caller that checks the packets).
Diagnostics go to stderr; exit 0 on success, 1 on failure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import redis
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition
from loopx.capabilities.reward_memory.memory_utility import validate_reward_memory_utility_observation
from loopx.capabilities.reward_memory.utility_reducer import (
    MEMORY_UTILITY_REDUCER_VERSION,
    reduce_reward_memory_utility_observations,
    reward_memory_utility_reducer_identity,
)

SCHEMA_HEADER = b"memory_utility_observation_v0"
SCOPE_FIELDS = ("agent_id", "project_id", "corpus_id", "surface_id")
BATCH = 500


def canonical(value: Any) -> bytes:
    """The contract's bytes: what mufold stores and what the reference CLI prints, sorted and compact."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def log(message: str) -> None:
    print(f"naive_loopx_fold: {message}", file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--redis-url", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--reducer-version", default=MEMORY_UTILITY_REDUCER_VERSION)
    ap.add_argument("--records", type=int, default=0, help="stop after this many records (0: no cap)")
    ap.add_argument("--max-value-bytes", type=int, default=65536, help="larger values are skipped (the fold's MUFOLD_MAX_VALUE_BYTES)")
    ap.add_argument("--poll-timeout", type=float, default=1.0, help="seconds one consume() waits for records")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    cap = args.records if args.records > 0 else None

    r = redis.Redis.from_url(args.redis_url)
    r.ping()
    consumer = Consumer(
        {
            "bootstrap.servers": args.brokers,
            "group.id": args.group,
            "client.id": "mufold-bench-naive-peer",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        # The end offsets now: the peer reads up to them (a topic being written stays a finite job).
        metadata = consumer.list_topics(args.topic, timeout=30)
        topic_meta = metadata.topics.get(args.topic)
        if topic_meta is None or topic_meta.error is not None:
            raise SystemExit(f"naive_loopx_fold: topic {args.topic} is not readable: {getattr(topic_meta, 'error', 'missing')}")
        partitions = sorted(topic_meta.partitions)
        low: dict[int, int] = {}
        high: dict[int, int] = {}
        for p in partitions:
            low[p], high[p] = consumer.get_watermark_offsets(TopicPartition(args.topic, p), timeout=30, cached=False)
        positions = {p: low[p] for p in partitions}

        def on_assign(c: Consumer, assigned: list[TopicPartition]) -> None:
            # From offset 0 (the log's start) whatever the group committed before: the whole history.
            for tp in assigned:
                tp.offset = OFFSET_BEGINNING
            c.assign(assigned)

        deliveries: dict[str, list[dict[str, Any]]] = {}
        contexts: dict[str, dict[str, Any]] = {}
        identity_of: dict[tuple[str, ...], str] = {}
        consumed = skipped = batches = deliveries_reduced = 0
        reduce_seconds = redis_seconds = 0.0

        def accept(key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes]] | None) -> tuple[str, dict[str, Any]] | None:
            """The record's identity and normalized observation, or None: the checks the fold makes."""
            if not value or len(value) > args.max_value_bytes:
                return None
            try:
                observation = validate_reward_memory_utility_observation(json.loads(value.decode("utf-8")))
            except (ValueError, TypeError, OverflowError, RecursionError, AttributeError):
                return None  # not UTF-8, not JSON, or not an observation (the validator raises a ValueError)
            schema = None
            for name, header in headers or ():
                if name == "schema":
                    schema = header  # the last one wins, as the fold reads it
            if schema is not None and schema != SCHEMA_HEADER:
                return None
            scope = observation["scope"]
            try:
                if key is None or key.decode("utf-8") != "/".join(scope[f] for f in SCOPE_FIELDS):
                    return None
            except UnicodeDecodeError:
                return None
            lookup = (*(scope[f] for f in SCOPE_FIELDS), observation["retrieval_snapshot_ref"], observation["policy_snapshot_ref"])
            identity = identity_of.get(lookup)
            if identity is None:
                context = {
                    "scope": scope,
                    "retrieval_snapshot_ref": observation["retrieval_snapshot_ref"],
                    "policy_snapshot_ref": observation["policy_snapshot_ref"],
                    "reducer_version": args.reducer_version,
                }
                identity = identity_of[lookup] = reward_memory_utility_reducer_identity(**context)
                contexts[identity] = context
            return identity, observation

        def done() -> bool:
            return (cap is not None and consumed >= cap) or all(positions[p] >= high[p] for p in partitions)

        t0 = time.perf_counter()
        consumer.subscribe([args.topic], on_assign=on_assign)
        while not done():
            # consume() waits for num_messages or the timeout: never ask for more than is left, or the last
            # batch would wait out the timeout.
            left = sum(high[p] - positions[p] for p in partitions)
            if cap is not None:
                left = min(left, cap - consumed)
            messages = consumer.consume(num_messages=max(1, min(BATCH, left)), timeout=args.poll_timeout)
            if not messages:
                # Transaction markers take offsets no record has: ask where the consumer stands.
                for tp in consumer.position([TopicPartition(args.topic, p) for p in partitions]):
                    if tp.offset >= 0 and tp.offset > positions[tp.partition]:
                        positions[tp.partition] = min(tp.offset, high[tp.partition])
                continue
            touched: set[str] = set()
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.fatal():
                        raise KafkaException(error)
                    log(f"consumer error: {error}")
                    continue
                p, offset = message.partition(), message.offset()
                if offset >= high[p] or (cap is not None and consumed >= cap):
                    continue  # past the end captured at the start, or past the cap: not this run's work
                consumed += 1
                positions[p] = offset + 1
                decided = accept(message.key(), message.value(), message.headers())
                if decided is None:
                    skipped += 1
                    continue
                identity, observation = decided
                deliveries.setdefault(identity, []).append(observation)
                touched.add(identity)
            if not touched:
                continue
            batches += 1
            t_reduce = time.perf_counter()
            packets = []
            for identity in touched:
                history = deliveries[identity]
                deliveries_reduced += len(history)
                packet = reduce_reward_memory_utility_observations(history, **contexts[identity])
                packets.append((f"{args.prefix}:naive:{{{identity}}}", canonical(packet)))
            t_redis = time.perf_counter()
            pipe = r.pipeline(transaction=False)
            for key, packet in packets:
                pipe.set(key, packet)
            pipe.execute()
            t_end = time.perf_counter()
            reduce_seconds += t_redis - t_reduce
            redis_seconds += t_end - t_redis
        seconds = time.perf_counter() - t0
    finally:
        consumer.close()
        r.close()

    result = {
        "records": consumed,
        "skipped": skipped,
        "identities": len(deliveries),
        "seconds": round(seconds, 6),
        "records_per_s": round(consumed / seconds, 3) if seconds > 0 else None,
        "batches": batches,
        "reduce_seconds": round(reduce_seconds, 6),
        "redis_seconds": round(redis_seconds, 6),
        "deliveries_reduced": deliveries_reduced,
        "starts": {str(p): low[p] for p in partitions},
        "positions": {str(p): positions[p] for p in partitions},
        "reducer_version": args.reducer_version,
    }
    text = json.dumps(result, sort_keys=True)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KafkaException as exc:
        log(f"Kafka: {exc}")
        sys.exit(1)
    except redis.RedisError as exc:
        log(f"Redis: {type(exc).__name__}: {exc}")
        sys.exit(1)
