#!/usr/bin/env bash
# Start a private Redis on 127.0.0.1:${MUFOLD_REDIS_PORT:-6379} (not the system
# service): daemonized, no persistence, files in <repo>/.cache/run/redis.
# Installs Debian's redis-server/redis-tools when missing. Idempotent.
set -euo pipefail
_tag=redis
# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

TIMEOUT_S="${MUFOLD_REDIS_START_TIMEOUT:-20}"
t0=$(now_ms)

# Debian's packaged service (/etc/init.d/redis-server, user redis, 127.0.0.1:6379).
# We never use it: it persists to /var/lib/redis and is shared machine state.
stop_system_service() {
  local sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
    $sudo systemctl disable --now redis-server >/dev/null 2>&1 || true
  else
    $sudo service redis-server stop >/dev/null 2>&1 || true
    $sudo update-rc.d redis-server disable >/dev/null 2>&1 || true
  fi
}

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  apt_install redis-server redis-tools
  # Postinst may have auto-started the system service on 6379 (where init allows it).
  stop_system_service
fi

ping() { [[ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" == "PONG" ]]; }
mkdir -p "$REDIS_RUN"
# One start at a time per instance; fd 8 is closed for the daemon below.
exec 8>"$REDIS_RUN/.start.lock"
flock -w "$TIMEOUT_S" 8 || die "another start.sh holds $REDIS_RUN/.start.lock"

pid="$(read_pid "$REDIS_PIDFILE")"
if pid_alive "$pid" && pid_cmdline_has "$pid" "redis-server" && ping; then
  say "already running (pid $pid, redis://127.0.0.1:$REDIS_PORT, RSS $(rss_mb "$pid"))"
  exit 0
fi
rm -f "$REDIS_PIDFILE"

if port_open "$REDIS_PORT"; then
  sys_pid="$(read_pid /run/redis/redis-server.pid)"
  if pid_alive "$sys_pid" && [[ "$REDIS_PORT" == 6379 ]]; then
    say "Debian's redis-server service holds :6379, stopping and disabling it"
    stop_system_service
    for ((i = 0; i < 50; i++)); do port_open "$REDIS_PORT" || break; sleep 0.1; done
  fi
  port_open "$REDIS_PORT" && die "port $REDIS_PORT is in use by another process; stop it or set MUFOLD_REDIS_PORT"
fi

redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes \
  --dir "$REDIS_RUN" --pidfile "$REDIS_PIDFILE" --logfile "$REDIS_RUN/redis.log" \
  --save '' --appendonly no --protected-mode yes --zset-max-listpack-value "$REDIS_ZSET_LISTPACK_VALUE" 8>&- \
  || die "redis-server failed to start (see ${REDIS_RUN#"$REPO_ROOT"/}/redis.log)"

deadline=$(( $(now_ms) + TIMEOUT_S * 1000 ))
until ping; do
  if (( $(now_ms) > deadline )); then
    tail -n 20 "$REDIS_RUN/redis.log" >&2 || true
    die "no PONG on 127.0.0.1:$REDIS_PORT after ${TIMEOUT_S}s"
  fi
  sleep 0.05
done
pid="$(read_pid "$REDIS_PIDFILE")"
say "ready in $(elapsed "$t0"): redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') on redis://127.0.0.1:$REDIS_PORT (pid $pid, logs ${REDIS_RUN#"$REPO_ROOT"/}/redis.log)"
