#!/usr/bin/env bash
# Whole-process comparison: a deployment through berthd (`berth deploy MODULE --env E`: bundle,
# upload, queue, dispatch to a local runner, gateway inputs, state in berthd's backend, log
# shipping, result, outputs) against running `runner run --op=apply` by hand on the same module
# with local state. Each from nothing (a new environment, a new work folder), alternating, N
# times each. Prints medians and their ratio. Release build.
#
# Usage: bench/deploy_overhead.sh [MODULE (default examples/hello)] [N (default 9)]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MODULE=${1:-examples/hello}
N=${2:-9}
source "$(scripts/testenv --env-file)"
cmake --preset release >/dev/null
cmake --build --preset release --target berth runner >/dev/null
BERTH=$PWD/build/release/apps/berth/berth
RUNNER=$PWD/build/release/apps/runner/runner
WORK=$(mktemp -d "${TMPDIR:-/tmp}/berth-bench-XXXXXX")
UP_PID=
cleanup() {
  if [[ -n $UP_PID ]]; then kill -TERM "$UP_PID" 2>/dev/null && wait "$UP_PID" || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
export PATH=$(dirname "$BERTH_TEST_TOFU"):$PATH HOME=$WORK
MIRROR=$BERTH_TEST_PROVIDER_MIRROR

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

"$BERTH" up --data-dir="$WORK/data" --listen=127.0.0.1:0 --providers="$MIRROR" >"$WORK/up.log" 2>&1 &
UP_PID=$!
for _ in $(seq 100); do [[ -s $WORK/data/berthd.url ]] && break; sleep 0.1; done

# examples/file (a provider-backed module) writes a file: each run its own.
vars() { [[ $MODULE == *examples/file ]] && echo "{\"path\": \"$WORK/$1.txt\"}" || echo "{}"; }

deploy_ms=() hand_ms=()
for i in $(seq "$N"); do
  vars "d$i" >"$WORK/d$i.vars.json"
  start=$(now)
  "$BERTH" --data-dir="$WORK/data" deploy "$MODULE" --env "bench-$i" \
    --var-file="$WORK/d$i.vars.json" >"$WORK/d$i.log"
  deploy_ms+=($(( ($(now) - start) / 1000000 )))

  vars "h$i" >"$WORK/h$i.vars.json"
  start=$(now)
  "$RUNNER" run --op=apply --module="$MODULE" --workdir="$WORK/h$i" --providers="$MIRROR" \
    --config="$WORK/h$i.vars.json" --outputs="$WORK/h$i.outputs.json" \
    --result="$WORK/h$i.json" >"$WORK/h$i.log"
  hand_ms+=($(( ($(now) - start) / 1000000 )))
done

d=$(printf '%s\n' "${deploy_ms[@]}" | median)
h=$(printf '%s\n' "${hand_ms[@]}" | median)
echo "module $MODULE, $N runs each (ms): berth deploy ${deploy_ms[*]}; runner by hand ${hand_ms[*]}"
echo "median: berth deploy $d ms, runner by hand $h ms"
awk -v d="$d" -v h="$h" 'BEGIN {printf "overhead ratio (berth deploy / runner by hand): %.2f\n", d / h}'
