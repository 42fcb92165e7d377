#!/usr/bin/env bash
# README command 1: the main job end to end on a fresh machine.
# Installs what is missing (node modules, Redis, the Kafka jars), starts Kafka
# and Redis, then runs `mufold demo` (simulate, fold with two workers, replay --verify).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -d node_modules ] || npm ci --no-audit --no-fund
[ -f dist/src/cli/main.js ] || npm run build
if [ -z "${KAFKA_BROKERS:-}" ] || [ -z "${REDIS_URL:-}" ]; then
  bash infra/up.sh >&2
  # shellcheck disable=SC1091
  . .cache/run/endpoints.env
  export KAFKA_BROKERS REDIS_URL
fi
exec node bin/mufold.js demo "$@"
