#!/usr/bin/env bash
# How many deployments a second berthd (`berth up`) accepts, and runs to their end on local
# runners of examples/hello, against the same TF work by hand; and berth's fixed cost per
# deployment. Release build.
#
# Usage: bench/deploy_throughput.sh [N (default 100)] [ENVIRONMENTS (default 10)]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source "$(scripts/testenv --env-file)"
cmake --preset release >/dev/null
cmake --build --preset release --target deploy_throughput berth runner >/dev/null
export PATH=$(dirname "$BERTH_TEST_TOFU"):$PATH
build/release/bench/deploy_throughput "$PWD/build/release/apps/berth/berth" "$BERTH_TEST_TOFU" examples/hello \
  "${1:-100}" "${2:-10}"
