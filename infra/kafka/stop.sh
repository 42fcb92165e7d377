#!/usr/bin/env bash
# Stop the private Kafka broker: SIGTERM (controlled shutdown), wait, then SIGKILL.
# No-op when it is not running.
set -euo pipefail
_tag=kafka
# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

GRACE_S="${MUFOLD_KAFKA_STOP_TIMEOUT:-30}"
pid="$(read_pid "$KAFKA_PIDFILE")"
if ! pid_alive "$pid" || ! pid_cmdline_has "$pid" "$KAFKA_PROPS"; then
  rm -f "$KAFKA_PIDFILE"
  say "not running"
  exit 0
fi

t0=$(now_ms)
kill -TERM "$pid" 2>/dev/null || true
for ((i = 0; i < GRACE_S * 10; i++)); do
  pid_alive "$pid" || break
  sleep 0.1
done
if pid_alive "$pid"; then
  warn "still alive after ${GRACE_S}s, sending SIGKILL to $pid"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do pid_alive "$pid" || break; sleep 0.1; done
fi
rm -f "$KAFKA_PIDFILE"
say "stopped (pid $pid, $(elapsed "$t0"))"
