#!/usr/bin/env bash
# Create (or reset) mufold's three least-privilege Redis ACL users for one key
# prefix, with the rules of roles.acl (see docs/security.md): the fold, the
# replay (the fold's rules and SCAN, for `mufold replay --promote`) and the reader.
#
#   infra/redis-acl/setup.sh PREFIX [--cluster] [--print] [-- redis-cli connection options]
#
#   MUFOLD_FOLD_USER / MUFOLD_REPLAY_USER / MUFOLD_READER_USER
#                      user names (mufold-fold / mufold-replay / mufold-reader)
#   MUFOLD_FOLD_PASSWORD / MUFOLD_REPLAY_PASSWORD / MUFOLD_READER_PASSWORD
#                      their passwords (required unless --print); sent as SHA-256 (#…), never in clear
#   --cluster   add the rules a Redis Cluster client needs (run once per node: ACLs are per node)
#   --print     print the ACL SETUSER lines instead of running them
#
# Then load the function libraries as the same admin: `mufold setup` (docs/security.md).
#
# The admin connection is redis-cli's: pass -h/-p/--user/--tls… after "--", and the admin
# password in REDISCLI_AUTH (not on the command line). The Redis version decides whether
# "+client|setinfo" (7.2+) is added.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

prefix="" cluster=0 print=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cluster) cluster=1 ;;
    --print) print=1 ;;
    -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    --) shift; break ;;
    -*) echo "setup.sh: unknown option $1" >&2; exit 2 ;;
    *) [[ -z "$prefix" ]] || { echo "setup.sh: one PREFIX only" >&2; exit 2; }; prefix="$1" ;;
  esac
  shift
done
[[ "$prefix" =~ ^[A-Za-z0-9_.:-]{1,100}$ ]] || { echo "usage: setup.sh PREFIX [--cluster] [--print] [-- redis-cli options] (PREFIX: letters, digits, _ . : -)" >&2; exit 2; }

rules() { # role -> its rules with the prefix filled in
  local line
  line="$(grep -E "^$1:" "$here/roles.acl")" || { echo "setup.sh: no role $1 in roles.acl" >&2; exit 1; }
  printf '%s\n' "${line#*: }" | sed "s/{prefix}/$prefix/g"
}

extra=""
[[ $cluster -eq 1 ]] && extra+=" $(rules cluster)"
if [[ $print -eq 0 ]]; then
  version="$(redis-cli "$@" INFO server | sed -n 's/^redis_version:\([0-9]*\)\.\([0-9]*\).*/\1 \2/p' | tr -d '\r')"
  [[ -n "$version" ]] || { echo "setup.sh: could not read the Redis version (redis-cli $*)" >&2; exit 1; }
  read -r major minor <<<"$version"
  if (( major > 7 || (major == 7 && minor >= 2) )); then extra+=" $(rules redis-7.2)"; fi
fi

for role in fold replay reader; do
  case $role in
    fold) user="${MUFOLD_FOLD_USER:-mufold-fold}" password="${MUFOLD_FOLD_PASSWORD:-}" own="$(rules fold)" ;;
    replay) user="${MUFOLD_REPLAY_USER:-mufold-replay}" password="${MUFOLD_REPLAY_PASSWORD:-}" own="$(rules fold) $(rules replay)" ;;
    reader) user="${MUFOLD_READER_USER:-mufold-reader}" password="${MUFOLD_READER_PASSWORD:-}" own="$(rules reader)" ;;
  esac
  if [[ $print -eq 1 ]]; then
    echo "ACL SETUSER $user reset on #<sha256 of the $role password> $own$extra"
    continue
  fi
  [[ -n "$password" ]] || { echo "setup.sh: set MUFOLD_$(tr a-z A-Z <<<"$role")_PASSWORD" >&2; exit 2; }
  hash="$(printf '%s' "$password" | sha256sum | cut -d' ' -f1)"
  # shellcheck disable=SC2086 # the rules are words
  reply="$(redis-cli "$@" ACL SETUSER "$user" reset on "#$hash" $own $extra)"
  [[ "$reply" == "OK" ]] || { echo "setup.sh: ACL SETUSER $user: $reply" >&2; exit 1; }
  echo "user $user ($role, prefix $prefix): OK"
done
