"""A foreign producer: confluent-kafka (librdkafka) sends records to a topic.

Run with the venv python of scripts/setup-foreign.sh:

    python confluent_produce.py --brokers B --topic T --input FILE \
        [--mode observations|records] [--partitioner NAME] [--compression zstd]

--mode observations: each non-empty input line is an observation's JSON text.
    The value is the line's bytes, unchanged; the key is computed here, as any
    producer would, from the observation's scope:
    agent_id/project_id/corpus_id/surface_id (UTF-8); headers
    schema=memory_utility_observation_v0, content-type=application/json.
--mode records: each line is {"key": str|null, "value": str, "headers": {str: str}}.

stdout: one JSON line per input record, in input order, from the delivery
reports: {"i": n, "key": str|null, "partition": p, "offset": o}. Exit 0 when
every record was delivered; 1 (reason on stderr) otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys

from confluent_kafka import KafkaException, Producer

SCHEMA_HEADERS = [("schema", b"memory_utility_observation_v0"), ("content-type", b"application/json")]
SCOPE_FIELDS = ("agent_id", "project_id", "corpus_id", "surface_id")


def records(path: str, mode: str):
    with open(path, "rb") as f:
        for raw in f.read().split(b"\n"):
            if not raw.strip():
                continue
            if mode == "observations":
                scope = json.loads(raw)["scope"]
                key = "/".join(scope[k] for k in SCOPE_FIELDS)
                yield key, raw, SCHEMA_HEADERS
            else:
                item = json.loads(raw)
                headers = [(k, v.encode("utf-8")) for k, v in (item.get("headers") or {}).items()]
                yield item.get("key"), item["value"].encode("utf-8"), headers


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--mode", choices=("observations", "records"), default="observations")
    ap.add_argument("--partitioner", default=None, help="librdkafka partitioner (default: librdkafka's, consistent_random)")
    ap.add_argument("--compression", default="zstd")
    args = ap.parse_args()

    config = {
        "bootstrap.servers": args.brokers,
        "client.id": "mufold-foreign-confluent",
        "compression.type": args.compression,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 20,
        "message.timeout.ms": 60_000,
    }
    if args.partitioner:
        config["partitioner"] = args.partitioner
    producer = Producer(config)

    reports: list[dict | None] = []
    errors: list[str] = []

    def on_delivery(index: int, key: str | None):
        def cb(err, msg):
            if err is not None:
                errors.append(f"record {index} (key {key!r}): {err}")
            else:
                reports[index] = {"i": index, "key": key, "partition": msg.partition(), "offset": msg.offset()}

        return cb

    for index, (key, value, headers) in enumerate(records(args.input, args.mode)):
        reports.append(None)
        while True:
            try:
                producer.produce(
                    args.topic,
                    value=value,
                    key=None if key is None else key.encode("utf-8"),
                    headers=headers,
                    on_delivery=on_delivery(index, key),
                )
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(60)
    if remaining:
        errors.append(f"{remaining} record(s) still undelivered after 60 s")
    missing = [i for i, r in enumerate(reports) if r is None]
    if errors or missing:
        print("confluent_produce: " + "; ".join(errors[:10] or [f"no delivery report for records {missing[:10]}"]), file=sys.stderr)
        return 1
    out = sys.stdout
    for r in reports:
        out.write(json.dumps(r, ensure_ascii=False) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KafkaException as exc:
        print(f"confluent_produce: {exc}", file=sys.stderr)
        sys.exit(1)
