#!/usr/bin/env bash
# Fails when a project include crosses the intended dependency directions:
#
#   cli -> controller -> policies        cli -> sim -> policies
#
#   policies/            includes only policies/
#   sim/                 policies/, sim/ (never controller/)
#   controller/pool/     policies/, pool/
#   controller/kafka/    policies/, pool/, kafka/
#   controller/api/      policies/, api/
#   controller/metrics/  policies/, pool/, kafka/, sinks/, metrics/
#   controller/loadgen/  policies/, pool/, kafka/, loadgen/
#   controller/calibration/  policies/, pool/, kafka/, loadgen/, calibration/
#   controller/sinks/    policies/, kafka/, sinks/
#   controller/ (its own files)  policies/, controller/**, lagpilot/ (never sim/)
#   include/lagpilot/    policies/, controller/**, lagpilot/
#   nothing outside cli/ includes cli/
#
# Usage: check-include-directions.sh [ROOT]   (default: the repository this script is in)
#        check-include-directions.sh --self-test   (checks that a crossing is caught)
# Prints each rule with its verdict and every offending line as file:line; exit 1 on any.
set -uo pipefail

if [[ ${1:-} == --self-test ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/policies" "$tmp/sim" "$tmp/controller/pool"
  printf '#include "policies/a.h"\n' >"$tmp/sim/ok.h"
  if ! "$0" "$tmp" >/dev/null; then echo "self-test: a clean tree was refused"; exit 1; fi
  for bad in 'policies/x.h:#include "sim/trace.h"' 'sim/x.h:#include "controller/pool/p.h"' \
             'controller/pool/x.cpp:#include "controller/kafka/k.h"' \
             'controller/x.cpp:#include "sim/trace.h"' 'sim/y.cpp:#include "cli/config.h"'; do
    file=${bad%%:*}
    rm -f "$tmp"/policies/x.h "$tmp"/sim/x.h "$tmp"/sim/y.cpp "$tmp"/controller/pool/x.cpp \
      "$tmp"/controller/x.cpp
    printf '%s\n' "${bad#*:}" >"$tmp/$file"
    if "$0" "$tmp" >/dev/null; then echo "self-test: missed ${bad}"; exit 1; fi
  done
  echo "self-test: every planted crossing was caught"
  exit 0
fi

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
failed=0

# check FOLDER ALLOWED_REGEX [EXCLUDE_REGEX]: every `#include "x/..."` in FOLDER's files (not
# below EXCLUDE) must match ALLOWED.
check() {
  local folder=$1 allowed=$2 exclude=${3:-^$} bad
  [[ -d $folder ]] || { printf '%-22s (absent)\n' "$folder/"; return; }
  bad=$(find "$folder" -type f \( -name '*.h' -o -name '*.cpp' \) | grep -Ev "$exclude" |
        xargs -r grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' |
        grep -Ev "#[[:space:]]*include[[:space:]]*\"($allowed)")
  if [[ -n $bad ]]; then
    printf '%-22s FAIL\n%s\n' "$folder/" "$bad"
    failed=1
  else
    printf '%-22s ok\n' "$folder/"
  fi
}

p='policies/'
c='controller/'
check policies "$p"
check sim "$p|sim/"
check controller/pool "$p|${c}pool/"
check controller/kafka "$p|${c}(pool|kafka)/"
check controller/api "$p|${c}api/"
check controller/metrics "$p|${c}(pool|kafka|sinks|metrics)/"
check controller/loadgen "$p|${c}(pool|kafka|loadgen)/"
check controller/calibration "$p|${c}(pool|kafka|loadgen|calibration)/"
check controller/sinks "$p|${c}(kafka|sinks)/"
check controller "$p|${c}|lagpilot/" "^controller/(pool|kafka|api|metrics|loadgen|calibration|sinks)/"
check include "$p|${c}|lagpilot/"

# Nothing outside cli/ includes cli/.
bad=$(find . -path ./cli -prune -o -path ./build -prune -o -path ./.git -prune -o -type f \
        \( -name '*.h' -o -name '*.cpp' \) -print |
      xargs -r grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"cli/')
if [[ -n $bad ]]; then
  printf '%-22s FAIL\n%s\n' "(outside cli/)" "$bad"
  failed=1
else
  printf '%-22s ok\n' "(no cli/ includes)"
fi
exit $failed
