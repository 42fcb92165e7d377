#!/usr/bin/env bash
# Install the foreign clients used by the interoperability tests
# (test/integration/foreign-clients.int.spec.ts):
#
#   <repo>/.cache/foreign-venv   python3.11 venv with loopx (the reference), redis-py
#                                and confluent-kafka (manylinux wheel: librdkafka with zstd)
#   kcat                         from Debian (apt-get), when not already on PATH
#
# Idempotent: a stamp file records the pinned versions; when it matches, the
# packages import and kcat is on PATH, the script exits at once. Prints the venv
# python path on stdout (diagnostics go to stderr). Works from any directory.
# Override the interpreter with MUFOLD_FOREIGN_PYTHON.
set -euo pipefail

LOOPX_VERSION="2.1.1"
REDIS_PY_VERSION="6.4.0"
CONFLUENT_KAFKA_VERSION="2.16.1"
PYTHON_BIN="${MUFOLD_FOREIGN_PYTHON:-python3.11}"

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd -- "$script_dir/.." && pwd)"
venv="$repo_root/.cache/foreign-venv"
venv_python="$venv/bin/python"
stamp="$venv/.mufold-foreign-stamp"
stamp_content="loopx==$LOOPX_VERSION redis==$REDIS_PY_VERSION confluent-kafka==$CONFLUENT_KAFKA_VERSION"

log() { printf 'setup-foreign: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Imports the three packages at their pinned versions and checks that the bundled
# librdkafka was built with zstd (librdkafka refuses builtin.features it lacks).
check_python() {
  "$venv_python" - "$LOOPX_VERSION" "$REDIS_PY_VERSION" "$CONFLUENT_KAFKA_VERSION" <<'PY' >/dev/null 2>&1
import sys
from importlib.metadata import version
want_loopx, want_redis, want_ck = sys.argv[1:4]
assert sys.version_info[:2] == (3, 11)
assert version("loopx") == want_loopx and version("redis") == want_redis and version("confluent-kafka") == want_ck
import loopx.capabilities.reward_memory.utility_reducer as r
assert callable(r.validate_reward_memory_utility_projection)
import redis
assert hasattr(redis.Redis, "fcall_ro")
import confluent_kafka
confluent_kafka.Producer({"builtin.features": "zstd"})
PY
}

# Fast path: already set up for these pinned versions.
if [[ -x "$venv_python" && -f "$stamp" && "$(cat "$stamp")" == "$stamp_content" ]] && command -v kcat >/dev/null 2>&1; then
  printf '%s\n' "$venv_python"
  exit 0
fi

# One installer at a time: test files run side by side, and a pip install
# rewriting the venv under a running client kills it (SIGBUS on the mapped
# librdkafka). Whoever waited finds the stamp the first one wrote.
mkdir -p "$repo_root/.cache"
exec 9>"$repo_root/.cache/foreign-venv.lock"
flock 9
if [[ -x "$venv_python" && -f "$stamp" && "$(cat "$stamp")" == "$stamp_content" ]] && command -v kcat >/dev/null 2>&1; then
  printf '%s\n' "$venv_python"
  exit 0
fi

# --- kcat (Debian package) ---------------------------------------------------
if ! command -v kcat >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || die "'kcat' is not on PATH and apt-get is not available: install kcat (https://packages.debian.org/kcat) and re-run $0."
  [[ "$(id -u)" == "0" ]] || die "'kcat' is not on PATH and installing it needs root: run 'apt-get install -y kcat' as root, then re-run $0."
  apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=180 kcat >&2
  }
  log "installing kcat with apt-get"
  if ! apt_install; then
    log "apt-get install failed; running apt-get update first"
    DEBIAN_FRONTEND=noninteractive apt-get update -q -o DPkg::Lock::Timeout=180 >&2 || die "'apt-get update' failed (is the Debian archive reachable?)."
    apt_install || die "'apt-get install -y kcat' failed."
  fi
  command -v kcat >/dev/null 2>&1 || die "kcat was installed but is not on PATH."
fi
kcat -V 2>&1 | grep -q 'builtin.features=.*zstd' ||
  die "$(command -v kcat) was built without zstd ($(kcat -V 2>&1 | grep -m1 '^Version' || true)); install Debian's kcat ('apt-get install -y kcat')."

# --- Python venv ---------------------------------------------------------------
if ! command -v "$PYTHON_BIN" >/dev/null 2>&1; then
  die "'$PYTHON_BIN' was not found on PATH. The foreign-client tests need CPython 3.11
  (e.g. 'apt-get install python3.11 python3.11-venv' or 'pyenv install 3.11'), or set MUFOLD_FOREIGN_PYTHON."
fi
"$PYTHON_BIN" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null ||
  die "'$PYTHON_BIN' is not CPython 3.11 ($("$PYTHON_BIN" -V 2>&1 || true)); set MUFOLD_FOREIGN_PYTHON to a CPython 3.11 interpreter."
"$PYTHON_BIN" -c 'import venv, ensurepip' 2>/dev/null ||
  die "'$PYTHON_BIN' lacks the venv/ensurepip modules (e.g. 'apt-get install python3.11-venv')."

if [[ ! -x "$venv_python" ]] || ! "$venv_python" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null; then
  log "creating virtual environment at $venv"
  rm -rf "$venv"
  mkdir -p "$repo_root/.cache"
  "$PYTHON_BIN" -m venv "$venv"
fi

if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$stamp_content" ]] || ! check_python; then
  rm -f "$stamp"
  log "installing $stamp_content"
  # --only-binary for confluent-kafka: a source build would link a system librdkafka
  # (maybe without zstd); the manylinux wheel bundles its own.
  "$venv_python" -m pip install --quiet --disable-pip-version-check \
    --only-binary=confluent-kafka \
    "loopx==$LOOPX_VERSION" "redis==$REDIS_PY_VERSION" "confluent-kafka==$CONFLUENT_KAFKA_VERSION" >&2 ||
    die "'pip install $stamp_content' failed (is PyPI reachable? is there a manylinux wheel of confluent-kafka for this platform?)."
  if ! check_python; then
    "$venv_python" -c 'import confluent_kafka; confluent_kafka.Producer({"builtin.features": "zstd"})' >&2 || true
    die "the packages installed but do not import at the pinned versions, or the bundled librdkafka lacks zstd (see above)."
  fi
  printf '%s\n' "$stamp_content" >"$stamp"
fi

log "foreign clients ready: $stamp_content, kcat $(kcat -V 2>&1 | grep -m1 '^Version' | cut -d' ' -f2- || true)"
printf '%s\n' "$venv_python"
