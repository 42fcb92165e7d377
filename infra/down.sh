#!/usr/bin/env bash
# Stop the local infra (Kafka, Redis). Data is kept; use infra/kafka/reset.sh
# to wipe Kafka. No-op for whatever is not running.
set -euo pipefail
_tag=infra
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

rc=0
"$INFRA_DIR/kafka/stop.sh" || rc=$?
"$INFRA_DIR/redis/stop.sh" || rc=$?
"$INFRA_DIR/redis-cluster/stop.sh" >/dev/null 2>&1 || true
# endpoints.env describes the last up.sh; drop it only if it is this instance's.
if grep -qx "KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT" "$RUN_DIR/endpoints.env" 2>/dev/null; then
  rm -f "$RUN_DIR/endpoints.env"
fi
exit "$rc"
