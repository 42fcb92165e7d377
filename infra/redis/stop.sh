#!/usr/bin/env bash
# Stop the private Redis (SHUTDOWN NOSAVE, then the pid). No-op when not running.
set -euo pipefail
_tag=redis
# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

pid="$(read_pid "$REDIS_PIDFILE")"
if ! pid_alive "$pid" || ! pid_cmdline_has "$pid" "redis-server"; then
  rm -f "$REDIS_PIDFILE"
  say "not running"
  exit 0
fi
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
for ((i = 0; i < 100; i++)); do pid_alive "$pid" || break; sleep 0.1; done
if pid_alive "$pid"; then
  warn "still alive after 10s, sending SIGKILL to $pid"
  kill -KILL "$pid" 2>/dev/null || true
fi
rm -f "$REDIS_PIDFILE"
say "stopped (pid $pid)"
