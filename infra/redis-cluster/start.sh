#!/usr/bin/env bash
# Start a local Redis Cluster for tests: 3 masters, no replicas, on 127.0.0.1:7100-7102
# (MUFOLD_REDIS_CLUSTER_PORT moves them), cluster-enabled, no persistence
# (appendonly no, save ""), files in <repo>/.cache/run/redis-cluster. Installs Debian's
# redis-server/redis-tools when missing. Idempotent: starts whatever node is down,
# creates the cluster when the nodes are new (redis-cli --cluster create), resets and
# recreates it when the nodes disagree (the data is throwaway), and returns once every
# node reports cluster_state:ok. Prints the URL last (also in <run dir>/url).
set -euo pipefail
_tag=redis-cluster
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

TIMEOUT_S="${MUFOLD_REDIS_START_TIMEOUT:-30}"
t0=$(now_ms)

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  apt_install redis-server redis-tools
  # Debian's postinst may start its own service on :6379; infra/redis/start.sh deals with it
  # if the single Redis is wanted. We never use it.
fi

mkdir -p "$CLUSTER_RUN"
# One start at a time; fd 8 is closed for the daemons below.
exec 8>"$CLUSTER_RUN/.start.lock"
flock -w "$TIMEOUT_S" 8 || die "another start.sh holds $CLUSTER_RUN/.start.lock"

wait_until() { # wait_until COMMAND...: poll COMMAND until it succeeds or TIMEOUT_S passes
  local deadline=$(( $(now_ms) + TIMEOUT_S * 1000 ))
  until "$@"; do
    (( $(now_ms) <= deadline )) || return 1
    sleep 0.1
  done
}

all_ok() {
  local p
  for p in "${CLUSTER_PORTS[@]}"; do [[ "$(node_info "$p" cluster_state)" == ok ]] || return 1; done
}

all_ours() {
  local p
  for p in "${CLUSTER_PORTS[@]}"; do node_ours "$p" || return 1; done
}

if all_ours && all_ok; then
  say "already running: 3 masters, cluster_state:ok"
  cluster_url
  echo
  exit 0
fi

start_node() {
  local port=$1 dir
  dir="$(node_dir "$port")"
  mkdir -p "$dir"
  if node_ours "$port" && node_ping "$port"; then return 0; fi
  rm -f "$(node_pidfile "$port")"
  port_open "$port" && die "port $port is in use by another process; stop it or set MUFOLD_REDIS_CLUSTER_PORT"
  port_open "$((port + 10000))" && die "cluster bus port $((port + 10000)) is in use by another process; set MUFOLD_REDIS_CLUSTER_PORT"
  {
    echo "bind 127.0.0.1"
    echo "port $port"
    echo "protected-mode yes"
    echo "daemonize yes"
    echo "dir $dir"
    echo "pidfile $dir/redis.pid"
    echo "logfile $dir/redis.log"
    echo "cluster-enabled yes"
    echo "cluster-config-file $dir/nodes.conf"
    echo "cluster-node-timeout 5000"
    echo "appendonly no"
    echo 'save ""'
    echo "zset-max-listpack-value $REDIS_ZSET_LISTPACK_VALUE"
    if [[ -n "${MUFOLD_REDIS_CLUSTER_PASSWORD:-}" ]]; then
      echo "requirepass \"$MUFOLD_REDIS_CLUSTER_PASSWORD\""
      echo "masterauth \"$MUFOLD_REDIS_CLUSTER_PASSWORD\""
    fi
  } >"$dir/redis.conf"
  chmod 600 "$dir/redis.conf"
  redis-server "$dir/redis.conf" 8>&- || die "redis-server on :$port failed to start (see ${dir#"$REPO_ROOT"/}/redis.log)"
  started+=("$port")
}

started=()
for p in "${CLUSTER_PORTS[@]}"; do start_node "$p"; done
for p in "${CLUSTER_PORTS[@]}"; do
  if ! wait_until node_ping "$p"; then
    tail -n 20 "$(node_dir "$p")/redis.log" >&2 || true
    die "no PONG on 127.0.0.1:$p after ${TIMEOUT_S}s"
  fi
done
((${#started[@]} == 0)) || say "started redis-server on :${started[*]}"

# What do the nodes know? formed: every node has 3 nodes and all 16384 slots; new: every node alone.
formed=1 fresh=1
for p in "${CLUSTER_PORTS[@]}"; do
  known="$(node_info "$p" cluster_known_nodes)"
  slots="$(node_info "$p" cluster_slots_assigned)"
  [[ "$known" == 3 && "$slots" == 16384 ]] || formed=0
  [[ "$known" == 1 && "$slots" == 0 ]] || fresh=0
done

create_cluster() {
  local nodes=() p log
  for p in "${CLUSTER_PORTS[@]}"; do nodes+=("127.0.0.1:$p"); done
  log="$CLUSTER_RUN/create.log"
  if ! redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    die "redis-cli --cluster create failed (see ${log#"$REPO_ROOT"/})"
  fi
  say "created the cluster: ${nodes[*]} (3 masters, no replicas)"
}

if ((formed)); then
  :
elif ((fresh)); then
  create_cluster
else
  # A half-formed or foreign layout (a node lost nodes.conf, an interrupted create): its data
  # is throwaway (no persistence), so start over.
  warn "the nodes disagree about the cluster; resetting and creating it again"
  for p in "${CLUSTER_PORTS[@]}"; do
    node_cli "$p" flushall >/dev/null
    node_cli "$p" cluster reset hard >/dev/null
  done
  create_cluster
fi

if ! wait_until all_ok; then
  for p in "${CLUSTER_PORTS[@]}"; do echo "--- :$p" >&2; node_cli "$p" cluster info 2>&1 | head -n 8 >&2 || true; done
  die "the cluster did not reach cluster_state:ok within ${TIMEOUT_S}s"
fi
cluster_url "${MUFOLD_REDIS_CLUSTER_PASSWORD:-}" >"$CLUSTER_RUN/url"
chmod 600 "$CLUSTER_RUN/url"
say "ready in $(elapsed "$t0"): redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), 3 masters, cluster_state:ok, logs ${CLUSTER_RUN#"$REPO_ROOT"/}/<port>/redis.log"
cluster_url
echo
