#!/usr/bin/env bash
# Runs schemathesis (PyPI) against a real `berth up`: no 5xx, no status or content type that
# docs/openapi.json does not document, no response that breaks its schema, no schema-valid
# request refused and no schema-violating one accepted. A fixed seed keeps a failure
# reproducible; `st replay` (printed on failure) repeats a case against a running berth up.
# Every check runs (schemathesis enables them all by default; CONFIG_TOML turns one off for
# the operations it names, with the reason).
# Usage: run_schemathesis.sh BERTH_BINARY CONFIG_TOML
set -euo pipefail
berth=$1
config=$2
# hooks.py, beside the configuration, mends positive cases that break a rule between fields.
PYTHONPATH=$(cd "$(dirname "$config")" && pwd)
export PYTHONPATH SCHEMATHESIS_HOOKS=hooks
work=$(mktemp -d)
cleanup() {
  # berth up and every runner it started: the process group this script leads.
  [[ -n ${pid:-} ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  pkill -TERM -f "$work/data/runs" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/module"
"$berth" up --data-dir "$work/data" --listen 127.0.0.1:0 >"$work/up.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  [[ -s $work/data/berthd.url ]] && break
  sleep 0.1
done
url=$(cat "$work/data/berthd.url")
export BERTH_TOKEN
BERTH_TOKEN=$(cat "$work/data/admin-token")
sed "s|@MODULE@|$work/module|" "$config" >"$work/schemathesis.toml"
cd "$work"
schemathesis --no-color --config-file "$work/schemathesis.toml" run "$url/openapi.json" \
  --max-examples 25 --seed 20261201 --workers 1 --phases examples,coverage,fuzzing,stateful \
  --suppress-health-check all --warnings off
