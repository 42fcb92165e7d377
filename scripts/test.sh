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
npx eslint .

report() {
  if [ -n "${MUFOLD_REPORT_DIR:-}" ]; then
    mkdir -p "$MUFOLD_REPORT_DIR"
    echo "--reporter=default --reporter=json --outputFile=$MUFOLD_REPORT_DIR/$1.json"
  fi
}
# shellcheck disable=SC2046
npx vitest run --project unit --project reference --project integration $(report main) "$@"
# shellcheck disable=SC2046
npx vitest run --project chaos $(report chaos) "$@"
