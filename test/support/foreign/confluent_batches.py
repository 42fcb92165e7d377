"""A foreign producer for the codec and transaction tests: confluent-kafka
(librdkafka) sends observations in the batches it chooses.

Run with the venv python of scripts/setup-foreign.sh:

    python confluent_batches.py --brokers B --topic T --spec FILE

FILE is one JSON object:
  {"compression": "gzip"|"snappy"|"lz4"|"zstd"|"none",
   "partition": p | null,              # null: librdkafka's partitioner on the scope key
   "transactional_id": str | null,     # set: each group below is one transaction
   "groups": [{"commit": bool, "lines": [observation JSON text, ...]}, ...]}
Without a transactional id, "commit" must be true and the groups are just sent.
Each value is the line's bytes; the key is agent_id/project_id/corpus_id/surface_id
of the observation's scope; headers schema=memory_utility_observation_v0 and
content-type=application/json.

stdout: {"delivered": n} (records the broker acknowledged). Exit 0 on success,
1 (reason on stderr) otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys

from confluent_kafka import KafkaException, Producer

HEADERS = [("schema", b"memory_utility_observation_v0"), ("content-type", b"application/json")]
SCOPE_FIELDS = ("agent_id", "project_id", "corpus_id", "surface_id")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--spec", required=True)
    args = ap.parse_args()
    with open(args.spec, "rb") as f:
        spec = json.load(f)

    config = {
        "bootstrap.servers": args.brokers,
        "client.id": "mufold-foreign-confluent-batches",
        "compression.type": spec["compression"],
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 20,
        "message.timeout.ms": 60_000,
    }
    transactional = spec.get("transactional_id") is not None
    if transactional:
        config["transactional.id"] = spec["transactional_id"]
    producer = Producer(config)
    errors: list[str] = []
    delivered = 0

    def on_delivery(err, msg):
        nonlocal delivered
        if err is not None:
            errors.append(str(err))
        else:
            delivered += 1

    if transactional:
        producer.init_transactions(30)
    for group in spec["groups"]:
        if not transactional and not group["commit"]:
            raise SystemExit("confluent_batches: an aborted group needs a transactional_id")
        if transactional:
            producer.begin_transaction()
        for line in group["lines"]:
            raw = line.encode("utf-8")
            scope = json.loads(raw)["scope"]
            key = "/".join(scope[k] for k in SCOPE_FIELDS).encode("utf-8")
            kwargs = {} if spec.get("partition") is None else {"partition": spec["partition"]}
            while True:
                try:
                    producer.produce(args.topic, value=raw, key=key, headers=HEADERS, on_delivery=on_delivery, **kwargs)
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
        if transactional:
            if group["commit"]:
                producer.commit_transaction(60)
            else:
                producer.flush(60)  # the aborted records reach the log before the abort marker
                producer.abort_transaction(60)
    remaining = producer.flush(60)
    if remaining:
        errors.append(f"{remaining} record(s) still undelivered after 60 s")
    if errors:
        print("confluent_batches: " + "; ".join(errors[:10]), file=sys.stderr)
        return 1
    print(json.dumps({"delivered": delivered}))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KafkaException as exc:
        print(f"confluent_batches: {exc}", file=sys.stderr)
        sys.exit(1)
