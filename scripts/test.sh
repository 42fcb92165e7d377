#!/usr/bin/env bash
# README command 2: every test tier on real parts.
#   unit         the pure core
#   reference    differential tests against loopx (PyPI) in a local venv
#   integration  real Kafka broker + real Redis
# Kafka and Redis come from KAFKA_BROKERS / REDIS_URL when set, else from the
# project's own infra scripts (which install and start them).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -d node_modules ] || npm ci --no-audit --no-fund
npm run build >/dev/null
bash scripts/setup-reference.sh >/dev/null
services="$(node scripts/locate-services.mjs)"
eval "$services"
export KAFKA_BROKERS REDIS_URL
echo "tests: KAFKA_BROKERS=$KAFKA_BROKERS REDIS_URL=$REDIS_URL" >&2
npx tsc -p tsconfig.json --noEmit
npx eslint .
exec npx vitest run "$@"
