#!/usr/bin/env bash
# API requests the Kubernetes launcher makes per run (by verb) for a plan and an apply, and
# the watch connections of N concurrent runs, against the real apiserver with the test node
# agent running the real runner and tofu. Release build, so that the runners are fast.
#
# Usage: bench/kube_requests.sh [CONCURRENT_RUNS (default 100)]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source "$(scripts/testenv --env-file)"
cmake --preset release >/dev/null
cmake --build --preset release --target kube_launcher_requests runner >/dev/null
build/release/bench/kube_launcher_requests "${1:-100}"
