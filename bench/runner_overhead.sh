#!/usr/bin/env bash
# Whole-process comparison: `runner run --op=plan` against a bare `tofu init && tofu plan -out`
# on the same module, each from a fresh work folder, alternating, N times each. A third column
# runs bare tofu through the same steps the runner takes (init, plan, show -json), so
# that the runner's own overhead stands apart from the steps its contract adds. Prints medians,
# ratios, and the runner's own peak memory (its -v=1 report; TF's memory is the same in all).
#
# Usage: [RUNNER=PATH] bench/runner_overhead.sh [MODULE (default examples/hello)] [N (default 9)]
# Needs: scripts/testenv, and the release runner (cmake --build --preset release --target runner),
# or RUNNER naming another build's (an older commit's, to compare).
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

runner_ms=() bare_ms=() same_ms=() mem_kib=()
for i in $(seq "$N"); do
  start=$(now)
  "$RUNNER" -v=1 run --op=plan --module="$MODULE" --workdir="$WORK/r$i" --providers="$MIRROR" \
    "${RUNNER_VARS[@]}" --result="$WORK/r$i.json" >"$WORK/r$i.log"
  runner_ms+=($(( ($(now) - start) / 1000000 )))
  mem_kib+=("$(sed -n 's/.*peak memory \([0-9]*\) KiB.*/\1/p' "$WORK/r$i.log")")

  mkdir -p "$WORK/b$i" && cp -r "$MODULE"/. "$WORK/b$i/"
  start=$(now)
  (cd "$WORK/b$i" && "$TOFU" init -input=false -no-color >/dev/null &&
    "$TOFU" plan -input=false -no-color "${VARS[@]}" -out=plan.tfplan >/dev/null)
  bare_ms+=($(( ($(now) - start) / 1000000 )))

  mkdir -p "$WORK/s$i" && cp -r "$MODULE"/. "$WORK/s$i/"
  start=$(now)
  (cd "$WORK/s$i" && "$TOFU" init -input=false -no-color >/dev/null &&
    "$TOFU" plan -input=false -no-color "${VARS[@]}" -out=plan.tfplan >/dev/null &&
    "$TOFU" show -json plan.tfplan >/dev/null)
  same_ms+=($(( ($(now) - start) / 1000000 )))
done

r=$(printf '%s\n' "${runner_ms[@]}" | median)
b=$(printf '%s\n' "${bare_ms[@]}" | median)
s=$(printf '%s\n' "${same_ms[@]}" | median)
m=$(printf '%s\n' "${mem_kib[@]}" | median)
echo "module:                 $MODULE ($N runs each, alternating)"
echo "runner run --op=plan:   median ${r} ms   (${runner_ms[*]})"
echo "tofu init && tofu plan: median ${b} ms   (${bare_ms[*]})"
echo "tofu, the runner's steps: median ${s} ms   (${same_ms[*]})"
awk -v r="$r" -v b="$b" -v s="$s" 'BEGIN {
  printf "ratio to init && plan:  %.3f\n", r / b
  printf "ratio to the same steps: %.3f\n", r / s }'
echo "runner peak memory:     median ${m} KiB"
