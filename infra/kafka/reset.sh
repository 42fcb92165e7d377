#!/usr/bin/env bash
# Wipe the broker's data (all topics, offsets, groups) for a clean test run.
# Keeps the cluster id and the fetched jars. Restarts the broker afterwards
# unless --stopped is given.
set -euo pipefail
_tag=kafka
# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

[[ $# -eq 0 || ( $# -eq 1 && "$1" == "--stopped" ) ]] || die "unknown argument: $* (usage: reset.sh [--stopped]; it wipes the broker's data)"

"$INFRA_DIR/kafka/stop.sh"
rm -rf "$KAFKA_DATA"
say "data wiped (${KAFKA_DATA#"$REPO_ROOT"/})"
if [[ "${1:-}" != "--stopped" ]]; then
  exec "$INFRA_DIR/kafka/start.sh"
fi
