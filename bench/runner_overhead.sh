#!/usr/bin/env bash
# Whole-process comparison: `runner run --op=plan` against a bare `tofu init && tofu plan -out`
# on the same module, each from a fresh work folder, alternating, N times each; with BASELINE
# naming another runner (an older commit's release build), a third column runs it too, so
# that before and after are measured in the same run. Prints medians, ratios, and the runner's
# own peak memory (its -v=1 report; TF's memory is the same in all).
#
# Usage: [RUNNER=PATH] [BASELINE=PATH] bench/runner_overhead.sh [MODULE (default examples/hello)]
#        [N (default 9)]
# Needs: scripts/testenv, and the release runner (cmake --build --preset release --target runner).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MODULE=${1:-examples/hello}
N=${2:-9}
source "$(scripts/testenv --env-file)"
RUNNER=${RUNNER:-$PWD/build/release/apps/runner/runner}
[[ -x $RUNNER ]] || { echo "build the release runner first" >&2; exit 1; }
TOFU=$BERTH_TEST_TOFU
WORK=$(mktemp -d "${TMPDIR:-/tmp}/berth-bench-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export PATH=$(dirname "$TOFU"):$PATH HOME=$WORK TF_IN_AUTOMATION=1 TF_INPUT=0
MIRROR=$BERTH_TEST_PROVIDER_MIRROR
export TF_CLI_CONFIG_FILE=$BERTH_TEST_TOFU_CLI_CONFIG

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Variables for examples/file and examples/heavy (provider-backed modules); others get none.
VARS=()
if [[ $MODULE == *examples/file || $MODULE == *examples/heavy ]]; then
  echo "{\"path\": \"$WORK/world.txt\"}" >"$WORK/vars.json"
  VARS=(-var-file="$WORK/vars.json")
fi
RUNNER_VARS=()
[[ ${#VARS[@]} -eq 0 ]] || RUNNER_VARS=(--config="$WORK/vars.json")

# Milliseconds of one `runner run --op=plan` with the runner $1 into work folder $2.
runner_plan() {
  local start
  start=$(now)
  "$1" -v=1 run --op=plan --module="$MODULE" --workdir="$WORK/$2" --providers="$MIRROR" \
    "${RUNNER_VARS[@]}" --result="$WORK/$2.json" >"$WORK/$2.log"
  echo $(( ($(now) - start) / 1000000 ))
}

runner_ms=() bare_ms=() base_ms=() mem_kib=()
for i in $(seq "$N"); do
  runner_ms+=("$(runner_plan "$RUNNER" "r$i")")
  mem_kib+=("$(sed -n 's/.*peak memory \([0-9]*\) KiB.*/\1/p' "$WORK/r$i.log")")
  [[ -z ${BASELINE:-} ]] || base_ms+=("$(runner_plan "$BASELINE" "o$i")")

  mkdir -p "$WORK/b$i" && cp -r "$MODULE"/. "$WORK/b$i/"
  start=$(now)
  (cd "$WORK/b$i" && "$TOFU" init -input=false -no-color >/dev/null &&
    "$TOFU" plan -input=false -no-color "${VARS[@]}" -out=plan.tfplan >/dev/null)
  bare_ms+=($(( ($(now) - start) / 1000000 )))
done

r=$(printf '%s\n' "${runner_ms[@]}" | median)
b=$(printf '%s\n' "${bare_ms[@]}" | median)
m=$(printf '%s\n' "${mem_kib[@]}" | median)
echo "module:                 $MODULE ($N runs each, alternating)"
echo "runner run --op=plan:   median ${r} ms   (${runner_ms[*]})"
echo "tofu init && tofu plan: median ${b} ms   (${bare_ms[*]})"
awk -v r="$r" -v b="$b" 'BEGIN { printf "ratio to init && plan:  %.3f\n", r / b }'
if [[ -n ${BASELINE:-} ]]; then
  o=$(printf '%s\n' "${base_ms[@]}" | median)
  echo "baseline runner:        median ${o} ms   (${base_ms[*]})"
  awk -v o="$o" -v b="$b" 'BEGIN { printf "baseline ratio:         %.3f\n", o / b }'
fi
echo "runner peak memory:     median ${m} KiB"
