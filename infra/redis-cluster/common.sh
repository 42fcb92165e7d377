# shellcheck shell=bash disable=SC2034  # variables are used by the sourcing scripts
# Shared by infra/redis-cluster/{start,stop}.sh. Source it; do not execute it.
# A local Redis Cluster: 3 masters, no replicas, on 127.0.0.1:
#   MUFOLD_REDIS_CLUSTER_PORT      first port (default 7100); the masters use it and the next two
#                                  (cluster bus: port + 10000)
#   MUFOLD_REDIS_CLUSTER_PASSWORD  optional requirepass/masterauth of every node
# Files: <repo>/.cache/run/redis-cluster/<port>/{redis.conf,nodes.conf,redis.pid,redis.log}
# (another first port gets run/redis-cluster-<port>).

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

CLUSTER_BASE_PORT="${MUFOLD_REDIS_CLUSTER_PORT:-7100}"
[[ "$CLUSTER_BASE_PORT" =~ ^[0-9]+$ ]] && (( CLUSTER_BASE_PORT >= 1024 && CLUSTER_BASE_PORT + 2 + 10000 <= 65535 )) \
  || die "MUFOLD_REDIS_CLUSTER_PORT=$CLUSTER_BASE_PORT: need 1024..55533 (the bus port is port + 10000)"
CLUSTER_PORTS=("$CLUSTER_BASE_PORT" "$((CLUSTER_BASE_PORT + 1))" "$((CLUSTER_BASE_PORT + 2))")
CLUSTER_RUN="$RUN_DIR/redis-cluster"
[[ "$CLUSTER_BASE_PORT" == 7100 ]] || CLUSTER_RUN="$RUN_DIR/redis-cluster-$CLUSTER_BASE_PORT"

case "${MUFOLD_REDIS_CLUSTER_PASSWORD:-}" in *'"'* | *'\'* | *$'\n'*) die "MUFOLD_REDIS_CLUSTER_PASSWORD must not contain a double quote, backslash or newline" ;; esac
# redis-cli reads the password from the environment (no warning, not in ps).
if [[ -n "${MUFOLD_REDIS_CLUSTER_PASSWORD:-}" ]]; then export REDISCLI_AUTH="$MUFOLD_REDIS_CLUSTER_PASSWORD"; fi

# Percent-encode for the userinfo of a URL (byte by byte).
urlencode() {
  local LC_ALL=C s=$1 out="" c i
  for ((i = 0; i < ${#s}; i++)); do
    c="${s:i:1}"
    case "$c" in
      [A-Za-z0-9._~-]) out+="$c" ;;
      *) printf -v c '%%%02X' "'$c"; out+="$c" ;;
    esac
  done
  printf '%s' "$out"
}

# cluster_url [PASSWORD]: the URL for REDIS_URL; the password is shown as *** unless given.
cluster_url() {
  local auth="" seeds="" p
  if [[ -n "${MUFOLD_REDIS_CLUSTER_PASSWORD:-}" ]]; then
    if [[ -n "${1:-}" ]]; then auth=":$(urlencode "$1")@"; else auth=":***@"; fi
  fi
  for p in "${CLUSTER_PORTS[@]}"; do seeds+="${seeds:+,}127.0.0.1:$p"; done
  printf 'redis+cluster://%s%s' "$auth" "$seeds"
}

node_dir() { printf '%s/%s' "$CLUSTER_RUN" "$1"; }
node_pidfile() { printf '%s/%s/redis.pid' "$CLUSTER_RUN" "$1"; }
node_cli() { local port=$1; shift; redis-cli -h 127.0.0.1 -p "$port" "$@"; }
node_ping() { [[ "$(node_cli "$1" ping 2>/dev/null)" == "PONG" ]]; }
# Our redis-server on that port (pid file, live pid, its command line)?
node_ours() {
  local pid
  pid="$(read_pid "$(node_pidfile "$1")")"
  pid_alive "$pid" && pid_cmdline_has "$pid" "redis-server" && pid_cmdline_has "$pid" ":$1"
}
# Alive and not a zombie waiting to be reaped (a container's init may reap late).
proc_running() { pid_alive "$1" && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
# node_info PORT FIELD: one field of CLUSTER INFO.
node_info() { node_cli "$1" cluster info 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"; }
