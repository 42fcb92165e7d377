# shellcheck shell=bash disable=SC2034  # variables are used by the sourcing scripts
# Shared helpers for infra/*.sh. Source it; do not execute it.
# Resolves paths relative to this file so every script works from any cwd.

INFRA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$INFRA_DIR/.." && pwd)"
CACHE_DIR="${MUFOLD_CACHE_DIR:-$REPO_ROOT/.cache}"
RUN_DIR="$CACHE_DIR/run"

KAFKA_PORT="${MUFOLD_KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${MUFOLD_KAFKA_CONTROLLER_PORT:-$((KAFKA_PORT + 1))}"
REDIS_PORT="${MUFOLD_REDIS_PORT:-6379}"
# The setting docs/operations.md recommends: mufold's sorted-set members (~100-200 bytes) stay in compact listpacks
# (Redis's default, 64, makes every one a skiplist node plus a dict entry: ~12% of Redis's memory a delivery).
REDIS_ZSET_LISTPACK_VALUE=256

# Default ports use run/kafka and run/redis; any other port gets its own state
# dir (run/kafka-19092, ...) so a second instance can run beside the default one.
KAFKA_RUN="$RUN_DIR/kafka"
[[ "$KAFKA_PORT" == 9092 ]] || KAFKA_RUN="$RUN_DIR/kafka-$KAFKA_PORT"
KAFKA_DATA="$KAFKA_RUN/data"
KAFKA_PIDFILE="$KAFKA_RUN/kafka.pid"
KAFKA_PROPS="$KAFKA_RUN/server.properties"
REDIS_RUN="$RUN_DIR/redis"
[[ "$REDIS_PORT" == 6379 ]] || REDIS_RUN="$RUN_DIR/redis-$REDIS_PORT"
REDIS_PIDFILE="$REDIS_RUN/redis.pid"

# The one place the pinned Kafka version lives is infra/kafka/pom.xml.
kafka_version() {
  sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$INFRA_DIR/kafka/pom.xml" | head -n1
}
KAFKA_VERSION="$(kafka_version)"
KAFKA_LIB="$CACHE_DIR/kafka/$KAFKA_VERSION/lib"

_tag="${_tag:-infra}"
say() { printf '[%s] %s\n' "$_tag" "$*"; }
warn() { printf '[%s] WARNING: %s\n' "$_tag" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "$_tag" "$*" >&2; exit 1; }

now_ms() { date +%s%3N; }
elapsed() { local s=$1; awk -v ms=$(( $(now_ms) - s )) 'BEGIN{printf "%.1fs", ms/1000}'; }

# TCP port accepting connections on 127.0.0.1?
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pid_alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }

# pid_cmdline_has PID STRING: guards against a recycled pid in a stale pid file.
pid_cmdline_has() {
  [[ -r "/proc/$1/cmdline" ]] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "$2"
}

read_pid() { if [[ -s "$1" ]]; then tr -dc '0-9' <"$1"; fi; }

rss_mb() { awk '/^VmRSS:/ {printf "%d MiB", $2/1024}' "/proc/$1/status" 2>/dev/null || echo "?"; }

# Install Debian packages (root, or sudo when available). Serialized with flock
# so parallel scripts (up.sh starts Redis and Kafka together) never fight over
# the dpkg lock; output goes to a log shown only on failure.
apt_install() {
  local sudo="" log
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || die "need root or sudo to apt-get install $*"
    sudo="sudo"
  fi
  say "apt-get install $* (one-time)"
  log="$(mktemp)"
  # apt-get update first: a fresh machine has no package lists.
  if ! {
    flock -w 600 9 &&
      $sudo apt-get -o DPkg::Lock::Timeout=300 update -qq &&
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
        install -y -qq --no-install-recommends "$@"
  } 9>"${TMPDIR:-/tmp}/mufold-infra-apt.lock" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    rm -f "$log"
    die "apt-get install $* failed"
  fi
  rm -f "$log"
}

# -h or --help as a script's first argument: print the script's header comment and exit, before it does anything
# (lib.sh is sourced first thing; a sourced file sees the script's arguments).
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"
  exit 0
fi
