#!/usr/bin/env bash
# README command 2: every test tier on real parts.
#   unit         the pure core
#   reference    differential tests against loopx (PyPI) in a local venv
#   integration  real Kafka broker + real Redis
#   chaos        faults and hostile input (restarts the broker and Redis, so it runs last, alone)
# Kafka and Redis come from KAFKA_BROKERS / REDIS_URL when set, else from the
# project's own infra scripts (which install and start them).
# MUFOLD_REPORT_DIR, when set, receives one JSON report per vitest run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -d node_modules ] || npm ci --no-audit --no-fund
npm run build >/dev/null
bash scripts/setup-reference.sh >/dev/null
services="$(npx tsx test/support/services/locate.mts)"
eval "$services"
export KAFKA_BROKERS REDIS_URL
echo "tests: KAFKA_BROKERS=$KAFKA_BROKERS REDIS_URL=$REDIS_URL" >&2
npx tsc -p tsconfig.json --noEmit
npx eslint .      # import directions, no cycles, pure core and engine
npx knip          # no unused files, exports or dependencies

report() {
  if [ -n "${MUFOLD_REPORT_DIR:-}" ]; then
    mkdir -p "$MUFOLD_REPORT_DIR"
    echo "--reporter=default --reporter=json --outputFile=$MUFOLD_REPORT_DIR/$1.json"
  fi
}
# shellcheck disable=SC2046
npx vitest run --project unit --project reference --project integration $(report main) "$@"

# --- Current Node: the unit and reference tiers again on each pinned Node -----
# (scripts/node-versions.sh: the versions, fetched from the npm registry into
# .cache/node). vitest itself runs on that Node, and that Node comes first on
# PATH, so what the tests spawn (process.execPath, or `node` from a shebang)
# runs on it too.
node_list="$(bash scripts/node-versions.sh)"
[ -n "$node_list" ] || { echo "tests: scripts/node-versions.sh named no Node" >&2; exit 1; }
mapfile -t node_bins <<<"$node_list"
for node_bin in "${node_bins[@]}"; do
  node_version="$("$node_bin" --version)"
  echo "tests: unit and reference tiers on Node $node_version ($node_bin)" >&2
  node_started=$SECONDS
  # shellcheck disable=SC2046
  PATH="$(dirname "$node_bin"):$PATH" "$node_bin" node_modules/vitest/vitest.mjs run --project unit --project reference $(report "node-${node_version%%.*}") "$@"
  echo "tests: Node $node_version tiers took $((SECONDS - node_started))s" >&2
done
# --- end of current Node --------------------------------------------------------

# shellcheck disable=SC2046
npx vitest run --project chaos $(report chaos) "$@"
