#!/usr/bin/env bash
# Install the reference implementation (PyPI loopx, pinned) into a private
# virtual environment used by the differential tests:
#
#   <repo>/.cache/reference-venv   (python3.11 venv with loopx==$LOOPX_VERSION)
#
# Idempotent: a stamp file records the pinned version; when it matches and the
# reducer module imports, the script exits at once. Prints the venv python path
# on stdout (diagnostics go to stderr). Works from any working directory.
set -euo pipefail

LOOPX_VERSION="2.1.1"
PYTHON_BIN="${MUFOLD_REFERENCE_PYTHON:-python3.11}"

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd -- "$script_dir/.." && pwd)"
venv="$repo_root/.cache/reference-venv"
venv_python="$venv/bin/python"
stamp="$venv/.mufold-reference-stamp"
stamp_content="loopx==$LOOPX_VERSION"

log() { printf 'setup-reference: %s\n' "$*" >&2; }

check_import() {
  "$venv_python" - <<'PY' >/dev/null 2>&1
import importlib.util, sys
spec = importlib.util.find_spec("loopx.capabilities.reward_memory.utility_reducer")
if spec is None or not str(spec.origin).endswith("loopx/capabilities/reward_memory/utility_reducer.py"):
    sys.exit(1)
import loopx.capabilities.reward_memory.utility_reducer  # noqa: F401
import loopx.capabilities.reward_memory.cli  # noqa: F401
import loopx.cli_runtime  # noqa: F401
sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)
PY
}

# Fast path: already set up for this pinned version.
if [[ -x "$venv_python" && -f "$stamp" && "$(cat "$stamp")" == "$stamp_content" ]] && check_import; then
  printf '%s\n' "$venv_python"
  exit 0
fi

if ! command -v "$PYTHON_BIN" >/dev/null 2>&1; then
  log "ERROR: '$PYTHON_BIN' was not found on PATH."
  log "The reference implementation (loopx==$LOOPX_VERSION) needs CPython 3.11."
  log "Install Python 3.11 (e.g. 'apt-get install python3.11 python3.11-venv', or 'pyenv install 3.11'),"
  log "or set MUFOLD_REFERENCE_PYTHON to a CPython 3.11 interpreter, then re-run $0."
  exit 1
fi
if ! "$PYTHON_BIN" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null; then
  log "ERROR: '$PYTHON_BIN' is not CPython 3.11 ($("$PYTHON_BIN" -V 2>&1 || true))."
  log "Install Python 3.11 or set MUFOLD_REFERENCE_PYTHON to a CPython 3.11 interpreter."
  exit 1
fi
if ! "$PYTHON_BIN" -c 'import venv, ensurepip' 2>/dev/null; then
  log "ERROR: '$PYTHON_BIN' lacks the venv/ensurepip modules."
  log "Install them (e.g. 'apt-get install python3.11-venv') and re-run $0."
  exit 1
fi

# (Re)create the venv if it is missing or broken.
if [[ ! -x "$venv_python" ]] || ! "$venv_python" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null; then
  log "creating virtual environment at $venv"
  rm -rf "$venv"
  mkdir -p "$repo_root/.cache"
  "$PYTHON_BIN" -m venv "$venv"
fi
rm -f "$stamp"

log "installing loopx==$LOOPX_VERSION"
if ! "$venv_python" -m pip install --quiet --disable-pip-version-check "loopx==$LOOPX_VERSION" >&2; then
  log "ERROR: 'pip install loopx==$LOOPX_VERSION' failed (is PyPI reachable?)."
  exit 1
fi

if ! check_import; then
  log "ERROR: loopx/capabilities/reward_memory/utility_reducer.py is not importable from $venv_python."
  exit 1
fi
printf '%s\n' "$stamp_content" >"$stamp"
log "reference ready: loopx==$LOOPX_VERSION"
printf '%s\n' "$venv_python"
