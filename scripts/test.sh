#!/usr/bin/env bash
# README command 2: every test tier on real parts.
#   unit         the pure core
#   reference    differential tests against loopx (PyPI) in a local venv
#   integration  real Kafka broker + real Redis (files in parallel; the few that cannot
#                run beside others after them, one at a time: vitest.config.ts)
#   runtime      what can differ by Node version, again on each other pinned Node
#   chaos        faults and hostile input (restarts the broker and Redis, so it runs last, alone)
# Kafka and Redis come from KAFKA_BROKERS / REDIS_URL when set, else from the
# project's own infra scripts (which install and start them).
# MUFOLD_REPORT_DIR, when set, receives one JSON report per vitest run.
#
# --quick (`npm run test:quick`): the inner loop. The unit and reference tiers on
# this Node at MUFOLD_TEST_DEPTH=quick (fewer generated cases, the same tests:
# test/support/depth.ts); no services, no lint. Before any test, the projects'
# globalSetup (test/support/dist-global-setup.ts) rebuilds dist/ if any source is
# newer than its output (after an edit, always; a full compile when nothing
# changed would cost ~10 s of CPU for nothing). Anything after the flag
# goes to vitest (`npm run test:quick -- test/unit/codecs`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
quick=""
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi
[ -d node_modules ] || npm ci --no-audit --no-fund

started=$SECONDS
step() { echo "tests: $1 ($((SECONDS - started))s)" >&2; }
report() {
  if [ -n "${MUFOLD_REPORT_DIR:-}" ]; then
    mkdir -p "$MUFOLD_REPORT_DIR"
    echo "--reporter=default --reporter=json --outputFile=$MUFOLD_REPORT_DIR/$1.json"
  fi
}

if [ -n "$quick" ]; then
  # dist/: rebuilt by the globalSetup when stale, over the old files (not `npm run build`,
  # which empties dist/ first while another run in this tree may be spawning it).
  bash scripts/setup-reference.sh >/dev/null
  step "unit and reference tiers at quick depth on Node $(node --version)"
  # shellcheck disable=SC2046
  MUFOLD_TEST_DEPTH=quick npx vitest run --project unit --project reference $(report quick) "$@"
  step "done"
  exit 0
fi

# Every test at full depth, whatever the shell has (the runtime projects set their own sample depth).
export MUFOLD_TEST_DEPTH=full
npm run build >/dev/null
bash scripts/setup-reference.sh >/dev/null
# Once, before the integration files that use them run side by side (the script also locks).
bash scripts/setup-foreign.sh >/dev/null
services="$(npx tsx test/support/services/locate.mts)"
eval "$services"
export KAFKA_BROKERS REDIS_URL
echo "tests: KAFKA_BROKERS=$KAFKA_BROKERS REDIS_URL=$REDIS_URL" >&2
npx tsc -p tsconfig.json --noEmit
npx eslint .      # import directions, no cycles, pure core and engine
npx knip          # no unused files, exports or dependencies
npm run docs      # the API reference builds (typedoc)
step "built and checked"

# Every tier on this Node, at full depth: unit and reference (CPU-bound, every core), then
# integration (files in parallel), then integration-serial (one at a time): vitest.config.ts.
# shellcheck disable=SC2046
npx vitest run --project unit --project reference --project integration --project integration-serial $(report main) "$@"
step "unit, reference and integration tiers on Node $(node --version)"

# --- Other Nodes: what differs by runtime, on each pinned Node -------------------
# (scripts/node-versions.sh: the versions, fetched from the npm registry into
# .cache/node). The runtime-unit and runtime-reference projects (vitest.config.ts,
# RUNTIME_DEPENDENT: the files that exercise runtime-dependent APIs, with the
# differential on a sample). vitest itself runs on that Node, and that Node comes
# first on PATH, so what the tests spawn (process.execPath, or `node` from a
# shebang) runs on it too.
node_list="$(bash scripts/node-versions.sh)"
[ -n "$node_list" ] || { echo "tests: scripts/node-versions.sh named no Node" >&2; exit 1; }
mapfile -t node_bins <<<"$node_list"
for node_bin in "${node_bins[@]}"; do
  node_version="$("$node_bin" --version)"
  echo "tests: runtime-dependent unit and reference files on Node $node_version ($node_bin)" >&2
  node_started=$SECONDS
  # shellcheck disable=SC2046
  PATH="$(dirname "$node_bin"):$PATH" "$node_bin" node_modules/vitest/vitest.mjs run --project runtime-unit --project runtime-reference $(report "node-${node_version%%.*}") "$@"
  echo "tests: Node $node_version tiers took $((SECONDS - node_started))s" >&2
done
# --- end of other Nodes -----------------------------------------------------------

# shellcheck disable=SC2046
npx vitest run --project chaos $(report chaos) "$@"
step "chaos tier; all tiers done"
