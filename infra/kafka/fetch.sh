#!/usr/bin/env bash
# Fetch the pinned Apache Kafka broker jars from Maven Central into
# <repo>/.cache/kafka/<version>/lib. Idempotent: a marker holding the pom's
# checksum makes re-runs instant; any pom change triggers a fresh copy.
set -euo pipefail
_tag=kafka
# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

POM="$INFRA_DIR/kafka/pom.xml"
MARKER="$KAFKA_LIB/.complete"
[[ -n "$KAFKA_VERSION" ]] || die "cannot read <kafka.version> from $POM"

pom_sum="$(sha256sum "$POM" | cut -d' ' -f1)"
if [[ -f "$MARKER" && "$(cat "$MARKER")" == "$pom_sum" ]]; then
  [[ "${1:-}" == "--quiet" ]] || say "Kafka $KAFKA_VERSION jars already in ${KAFKA_LIB#"$REPO_ROOT"/}"
  exit 0
fi

command -v java >/dev/null || apt_install openjdk-17-jre-headless
command -v mvn >/dev/null || apt_install maven

t0=$(now_ms)
say "fetching Kafka $KAFKA_VERSION from Maven Central (mvn dependency:copy-dependencies)"
mkdir -p "$(dirname "$KAFKA_LIB")"
tmp="$(mktemp -d "$(dirname "$KAFKA_LIB")/lib.tmp.XXXXXX")"
mvnlog="$tmp.mvn.log"
trap 'rm -rf "$tmp" "$mvnlog"' EXIT
if ! mvn -q -B -f "$POM" -Dstyle.color=never \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$mvnlog" 2>&1; then
  tail -n 40 "$mvnlog" >&2
  die "Maven could not fetch Kafka $KAFKA_VERSION (log above)"
fi
[[ -f "$tmp/kafka_2.13-$KAFKA_VERSION.jar" ]] || die "kafka_2.13-$KAFKA_VERSION.jar missing after fetch"
printf '%s\n' "$pom_sum" >"$tmp/.complete"
rm -rf "$KAFKA_LIB"
mv "$tmp" "$KAFKA_LIB"
say "Kafka $KAFKA_VERSION: $(find "$KAFKA_LIB" -name '*.jar' | wc -l) jars in ${KAFKA_LIB#"$REPO_ROOT"/} ($(elapsed "$t0"))"
