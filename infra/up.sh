#!/usr/bin/env bash
# Bring up the local infra: private Redis and a single-node KRaft Kafka broker.
# Installs/fetches what is missing (apt redis-server, Kafka jars from Maven
# Central); a warm run takes well under a second. Prints the endpoints last and
# writes them to <repo>/.cache/run/endpoints.env (source it).
set -euo pipefail
_tag=infra
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

t0=$(now_ms)
mkdir -p "$RUN_DIR"
# Redis (apt) and Kafka (Maven + JVM start) are independent: run them in parallel.
"$INFRA_DIR/redis/start.sh" &
redis_job=$!
kafka_rc=0
"$INFRA_DIR/kafka/start.sh" || kafka_rc=$?
redis_rc=0
wait "$redis_job" || redis_rc=$?
(( kafka_rc == 0 )) || die "Kafka failed to start (exit $kafka_rc)"
(( redis_rc == 0 )) || die "Redis failed to start (exit $redis_rc)"

cat >"$RUN_DIR/endpoints.env" <<ENV
KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT
REDIS_URL=redis://127.0.0.1:$REDIS_PORT
ENV
say "up in $(elapsed "$t0")"
cat "$RUN_DIR/endpoints.env"
