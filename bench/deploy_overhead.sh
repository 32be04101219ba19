#!/usr/bin/env bash
# Whole-process comparison: a deployment through berthd (`berth deploy MODULE --env E`: bundle,
# upload, queue, dispatch to a local runner, gateway inputs, state in berthd's backend, log
# shipping, result, outputs) against bare `tofu init && tofu plan -out=P && tofu apply P` and
# against `runner run --op=apply` by hand, both on the same module with local state. Each from
# nothing (a new environment, a new work folder), alternating, N times each. Prints medians and
# their ratios. Release build. With APPROVAL=1 the deployment waits for approval and
# `--auto-approve` approves it (a plan run, then an apply run of the saved plan).
#
# With PACKED=1 the providers come as registries serve them, zip files (a packed mirror made
# from the test mirror), and the module has the lock file a user commits: each init without a
# cache unpacks its providers. berthd's runs share their runner's provider cache; bare tofu
# gets a plugin cache of its own (TF_PLUGIN_CACHE_DIR, warm after its first run), as a user
# who runs tofu by hand would have; the runner by hand has none.
#
# With BASELINE=REV (a commit), REV's own `berth deploy` is timed too, alternating with this
# tree's in the same run (machines here are noisy: only figures from one run compare); REV is
# built once into build/bench-baseline/REV. BASELINE_BERTH=PATH times a berth binary built
# already instead (with its runner beside it, as a build tree has it).
#
# Usage: [BASELINE=REV | BASELINE_BERTH=PATH] [APPROVAL=1] [PACKED=1] bench/deploy_overhead.sh [MODULE (default examples/hello)] [N (default 9)]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MODULE=${1:-examples/hello}
N=${2:-9}
source "$(scripts/testenv --env-file)"
cmake --preset release >/dev/null
cmake --build --preset release --target berth runner >/dev/null
BERTH=$PWD/build/release/apps/berth/berth
RUNNER=$PWD/build/release/apps/runner/runner
BASE_BERTH=${BASELINE_BERTH:-}
if [[ -n $BASE_BERTH ]]; then
  BASELINE=$BASE_BERTH rev=prebuilt
elif [[ -n ${BASELINE:-} ]]; then
  rev=$(git rev-parse --short "$BASELINE")
  src=$PWD/build/bench-baseline/$rev
  [[ -d $src ]] || git worktree add --detach "$src" "$rev" >/dev/null
  # berth up serves in-process and runs the runner beside it: both from REV.
  (cd "$src" && cmake --preset release >/dev/null &&
    cmake --build --preset release --target berth runner >/dev/null)
  BASE_BERTH=$src/build/release/apps/berth/berth
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/berth-bench-XXXXXX")
UP_PIDS=()
cleanup() {
  for pid in "${UP_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" || true; done
  [[ -n ${KEEP:-} ]] || rm -rf "$WORK"
}
trap cleanup EXIT
export PATH=$(dirname "$BERTH_TEST_TOFU"):$PATH HOME=$WORK
MIRROR=$BERTH_TEST_PROVIDER_MIRROR
BARE_CONFIG=$BERTH_TEST_TOFU_CLI_CONFIG BARE_CACHE=
# examples/file and examples/heavy (provider-backed modules) write a file: each run its own,
# relative to its work folder (a sandboxed run can write nowhere else).
WRITES_FILE=
[[ $MODULE == *examples/file || $MODULE == *examples/heavy ]] && WRITES_FILE=1
if [[ -n ${PACKED:-} ]]; then
  # HOST/NS/TYPE/VERSION/PLATFORM/FILES in the mirror: HOST/NS/TYPE/terraform-provider-TYPE_VERSION_PLATFORM.zip
  for package in "$MIRROR"/*/*/*/*/*/; do
    rel=${package#"$MIRROR"/} && IFS=/ read -r host ns type version platform _ <<<"$rel"
    mkdir -p "$WORK/packed/$host/$ns/$type"
    (cd "$package" && zip -q -r "$WORK/packed/$host/$ns/$type/terraform-provider-${type}_${version}_$platform.zip" .)
  done
  printf 'provider_installation {\n  filesystem_mirror {\n    path = "%s"\n  }\n}\n' "$WORK/packed" >"$WORK/packed.tfrc"
  cp -r "$MODULE" "$WORK/module"
  (cd "$WORK/module" && TF_CLI_CONFIG_FILE=$WORK/packed.tfrc "$BERTH_TEST_TOFU" init -input=false >/dev/null && rm -rf .terraform)
  MODULE=$WORK/module MIRROR=$WORK/packed BARE_CONFIG=$WORK/packed.tfrc
  BARE_CACHE=$WORK/bare-plugin-cache
  mkdir -p "$BARE_CACHE"
fi

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# berth up from binary $1 with data folder $2, and its flags after.
up() {
  "$1" up --data-dir="$2" --listen=127.0.0.1:0 --providers="$MIRROR" "${@:3}" >"$2.up.log" 2>&1 &
  UP_PIDS+=($!)
  for _ in $(seq 100); do [[ -s $2/berthd.url ]] && break; sleep 0.1; done
}
# As root beside a baseline, this tree's runs take users of their own: a baseline from before
# run users were held (and firewalled) per berthd runs its runs as 60100 up, which this tree's
# firewall for those users would cut off from its berthd.
OWN_USERS=()
[[ -z $BASE_BERTH || $(id -u) -ne 0 ]] || OWN_USERS=(--local-runner-uid=61100)
up "$BERTH" "$WORK/data" "${OWN_USERS[@]}"
[[ -z $BASE_BERTH ]] || up "$BASE_BERTH" "$WORK/base"

vars() { [[ -n $WRITES_FILE ]] && echo "{\"path\": \"$1.txt\"}" || echo "{}"; }

APPROVE=()
[[ -z ${APPROVAL:-} ]] || APPROVE=(--require-approval --auto-approve)

# Prints how long `berth deploy` of binary $1 against data folder $2 took for run $3, in ms.
# The deployment's id is in $WORK/$3.log.
deploy() {
  vars "$3" >"$WORK/$3.vars.json"
  local start
  start=$(now)
  if ! "$1" --data-dir="$2" deploy "$MODULE" --env "bench-$3" --var-file="$WORK/$3.vars.json" \
    "${APPROVE[@]}" >"$WORK/$3.log" 2>&1; then
    echo "berth deploy failed ($1, run $3):" >&2
    tail -5 "$WORK/$3.log" >&2
    exit 1
  fi
  echo $(( ($(now) - start) / 1000000 ))
}

deploy_ms=() base_ms=() hand_ms=() bare_ms=()
for i in $(seq "$N"); do
  ms=$(deploy "$BERTH" "$WORK/data" "d$i") || exit 1
  deploy_ms+=("$ms")
  if [[ -n $BASE_BERTH ]]; then
    ms=$(deploy "$BASE_BERTH" "$WORK/base" "b$i") || exit 1
    base_ms+=("$ms")
  fi

  vars "h$i" >"$WORK/h$i.vars.json"
  start=$(now)
  "$RUNNER" run --op=apply --module="$MODULE" --workdir="$WORK/h$i" --providers="$MIRROR" \
    --config="$WORK/h$i.vars.json" --outputs="$WORK/h$i.outputs.json" \
    --result="$WORK/h$i.json" >"$WORK/h$i.log"
  hand_ms+=($(( ($(now) - start) / 1000000 )))

  mkdir -p "$WORK/t$i" && cp -r "$MODULE"/. "$WORK/t$i/"
  vars "$WORK/t$i/out" >"$WORK/t$i/vars.tfvars.json"
  start=$(now)
  (cd "$WORK/t$i" && export TF_CLI_CONFIG_FILE=$BARE_CONFIG TF_IN_AUTOMATION=1 &&
    if [[ -n $BARE_CACHE ]]; then export TF_PLUGIN_CACHE_DIR=$BARE_CACHE; fi &&
    "$BERTH_TEST_TOFU" init -input=false -no-color >/dev/null &&
    "$BERTH_TEST_TOFU" plan -input=false -no-color -var-file=vars.tfvars.json -out=p >/dev/null &&
    "$BERTH_TEST_TOFU" apply -input=false -no-color p >/dev/null)
  bare_ms+=($(( ($(now) - start) / 1000000 )))
done

# Where this tree's deployments spent their time (medians, ms), from their own timings: the
# client (its start, bundle, requests, the log's end) is what the deployment's span leaves.
for i in $(seq "$N"); do
  id=$(grep -o 'deployment d-[a-z0-9]*' "$WORK/d$i.log" | head -1 | cut -d' ' -f2)
  "$BERTH" --data-dir="$WORK/data" deployment "$id" --timings -o json >"$WORK/d$i.timings.json"
done
python3 - "$WORK" "$N" "${deploy_ms[@]}" <<'PY'
import json, statistics, sys
work, n, walls = sys.argv[1], int(sys.argv[2]), [float(w) for w in sys.argv[3:]]
parts = {"client and API": [], "queued and launch": [], "waiting for approval": [],
         "run outside TF": [], "TF": []}
for i in range(n):
    t = json.load(open(f"{work}/d{i + 1}.timings.json"))
    ms = dict.fromkeys(parts, 0.0)
    # With approval a deployment has two launches and two runs: each span counts.
    for span in t["spans"]:
        if span["name"] in ("queued", "launch"):
            ms["queued and launch"] += 1000 * span["seconds"]
        elif span["name"] == "waiting_approval":
            ms["waiting for approval"] += 1000 * span["seconds"]
        for step in span.get("steps", []):
            ms["run outside TF" if step["name"] == "(outside TF)" else "TF"] += 1000 * step["seconds"]
    ms["client and API"] = walls[i] - 1000 * t["total_seconds"]
    for k in parts:
        parts[k].append(ms[k])
print("berth deploy, where it went (medians): " +
      ", ".join(f"{k} {statistics.median(v):.0f} ms" for k, v in parts.items()))
PY

d=$(printf '%s\n' "${deploy_ms[@]}" | median)
h=$(printf '%s\n' "${hand_ms[@]}" | median)
t=$(printf '%s\n' "${bare_ms[@]}" | median)
echo "module ${1:-examples/hello}${APPROVAL:+, with approval}${PACKED:+, packed providers}, $N runs each (ms): berth deploy ${deploy_ms[*]}; runner by hand ${hand_ms[*]}; bare tofu ${bare_ms[*]}"
echo "median: berth deploy $d ms, runner by hand $h ms, bare tofu $t ms"
awk -v d="$d" -v t="$t" 'BEGIN {printf "ratio (berth deploy / bare init && plan && apply): %.2f\n", d / t}'
awk -v d="$d" -v h="$h" 'BEGIN {printf "overhead ratio (berth deploy / runner by hand): %.2f\n", d / h}'
if [[ -n $BASE_BERTH ]]; then
  b=$(printf '%s\n' "${base_ms[@]}" | median)
  echo "baseline $BASELINE ($rev) berth deploy (ms): ${base_ms[*]}; median $b ms"
  awk -v d="$d" -v b="$b" -v h="$h" 'BEGIN {printf "this tree / baseline: %.2f (baseline overhead ratio %.2f)\n", d / b, b / h}'
fi
