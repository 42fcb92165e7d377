#!/usr/bin/env bash
# Stop the local Redis Cluster started by start.sh (SHUTDOWN NOSAVE per node, then the pid).
# No-op for nodes that are not running. nodes.conf stays, so the next start.sh brings the
# same (empty) cluster back without re-creating it; --purge deletes the run directory too.
set -euo pipefail
_tag=redis-cluster
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

purge=0
for arg in "$@"; do
  case "$arg" in
    --purge) purge=1 ;;
    *) die "unknown argument $arg (usage: stop.sh [--purge])" ;;
  esac
done

stopped=()
for port in "${CLUSTER_PORTS[@]}"; do
  pidfile="$(node_pidfile "$port")"
  pid="$(read_pid "$pidfile")"
  if ! node_ours "$port"; then
    rm -f "$pidfile"
    continue
  fi
  if [[ -z "${REDISCLI_AUTH:-}" ]]; then # started with a password? it is in the node's config
    pw="$(sed -n 's/^requirepass "\(.*\)"$/\1/p' "$(node_dir "$port")/redis.conf" 2>/dev/null || true)"
    if [[ -n "$pw" ]]; then export REDISCLI_AUTH="$pw"; fi
  fi
  # SHUTDOWN NOSAVE (needs the password when one is set); SIGTERM does the same shutdown
  # here, since nothing is configured to persist.
  node_cli "$port" shutdown nosave >/dev/null 2>&1 || true
  for ((i = 0; i < 20; i++)); do proc_running "$pid" || break; sleep 0.1; done
  if proc_running "$pid"; then kill -TERM "$pid" 2>/dev/null || true; fi
  for ((i = 0; i < 100; i++)); do proc_running "$pid" || break; sleep 0.1; done
  if proc_running "$pid"; then
    warn "redis-server :$port still alive after 10s, sending SIGKILL to $pid"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  stopped+=(":$port (pid $pid)")
done
if ((${#stopped[@]} == 0)); then say "not running"; else say "stopped ${stopped[*]}"; fi
if ((purge)); then
  rm -rf "$CLUSTER_RUN"
  say "removed ${CLUSTER_RUN#"$REPO_ROOT"/}"
fi
