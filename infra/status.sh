#!/usr/bin/env bash
# Show what is running. Exit 0 when Kafka and Redis are both up and healthy, 1 otherwise.
set -uo pipefail
_tag=status
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

rc=0
pid="$(read_pid "$KAFKA_PIDFILE")"
if pid_alive "$pid" && pid_cmdline_has "$pid" "$KAFKA_PROPS"; then
  if probe="$(node "$INFRA_DIR/kafka/ready.mjs" --brokers "127.0.0.1:$KAFKA_PORT" --timeout-ms 3000 --pid "$pid" 2>&1)"; then
    echo "kafka: UP      KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT  Kafka $KAFKA_VERSION  pid $pid  RSS $(rss_mb "$pid")  $probe"
  else
    echo "kafka: UNHEALTHY pid $pid on 127.0.0.1:$KAFKA_PORT: $probe"; rc=1
  fi
else
  if port_open "$KAFKA_PORT"; then
    echo "kafka: DOWN    (ours is not running, but something else listens on :$KAFKA_PORT)"
  else
    echo "kafka: DOWN"
  fi
  rc=1
fi
echo "       logs ${KAFKA_RUN#"$REPO_ROOT"/}/server.log"

pid="$(read_pid "$REDIS_PIDFILE")"
if pid_alive "$pid" && pid_cmdline_has "$pid" "redis-server"; then
  if [[ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" == PONG ]]; then
    ver="$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" info server 2>/dev/null | sed -n 's/^redis_version:\(.*\)\r$/\1/p')"
    keys="$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" dbsize 2>/dev/null)"
    echo "redis: UP      REDIS_URL=redis://127.0.0.1:$REDIS_PORT  Redis $ver  pid $pid  RSS $(rss_mb "$pid")  keys(db0) $keys"
  else
    echo "redis: UNHEALTHY pid $pid, no PONG on :$REDIS_PORT"; rc=1
  fi
else
  if port_open "$REDIS_PORT"; then
    echo "redis: DOWN    (ours is not running, but something else listens on :$REDIS_PORT)"
  else
    echo "redis: DOWN"
  fi
  rc=1
fi
echo "       logs ${REDIS_RUN#"$REPO_ROOT"/}/redis.log"
exit "$rc"
