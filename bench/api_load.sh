#!/usr/bin/env bash
# Load on berthd's API from wrk on loopback, on SQLite and on PostgreSQL in one session:
# `get runners` (a list of 20) and `create runner` (a new id each request). Prints wrk's
# requests/s and latency percentiles for each. wrk drives as fast as berthd answers with 8
# connections; where it sustains far more than 1000 requests/s, its p99 at that load bounds the
# p99 at 1000 requests/s from above.
#
# Usage: bench/api_load.sh [SECONDS (default 10)]
# Needs: the release berthd (cmake --build --preset release --target berthd), wrk (Debian),
# PostgreSQL's server binaries (scripts/bootstrap).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SECONDS_EACH=${1:-10}
BERTHD=$PWD/build/release/apps/berthd/berthd
command -v wrk >/dev/null || { echo "install wrk (apt-get install wrk)" >&2; exit 1; }
[[ -x $BERTHD ]] || { echo "build the release berthd first" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/berth-api-bench-XXXXXX")
chmod 755 "$WORK"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

start_postgres() {
  local bin=/usr/lib/postgresql/15/bin as=()
  mkdir -p "$WORK/pg"
  if [[ $(id -u) -eq 0 ]]; then chown nobody "$WORK/pg"; as=(runuser -u nobody --); fi
  "${as[@]}" "$bin/initdb" -D "$WORK/pg" -U postgres --auth=trust --no-sync >/dev/null
  "${as[@]}" "$bin/postgres" -D "$WORK/pg" -p 55432 -k "$WORK/pg" -c listen_addresses=127.0.0.1 \
    -c fsync=off >"$WORK/pg.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 50); do "$bin/pg_isready" -h 127.0.0.1 -p 55432 -q && return; sleep 0.2; done
  echo "postgres did not start" >&2; exit 1
}

cat >"$WORK/create.lua" <<'LUA'
-- Each wrk thread gets its own prefix (their random generators start alike).
local threads = 0
setup = function(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local n = 0
request = function()
  n = n + 1
  local id = string.format("r-%d-%d-%d", tid, os.time() % 100000, n)
  return wrk.format("POST", nil, nil,
    '{"id":"' .. id .. '","runner_configuration":{"type":"local"},' ..
    '"state_storage_configuration":{"type":"berth"}}')
end
LUA

run() {
  local name=$1 database=$2 data=$WORK/$1
  "$BERTHD" --data-dir="$data" --listen=127.0.0.1:0 --rate-limit=0 ${database:+--database="$database"} \
    >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do [[ -s $data/berthd.url ]] && break; sleep 0.1; done
  local url token
  url=$(cat "$data/berthd.url") token=$(cat "$data/admin-token")
  for i in $(seq 20); do
    curl -sf -o /dev/null -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
      -d "{\"id\":\"seed-$i\",\"runner_configuration\":{\"type\":\"local\"},\"state_storage_configuration\":{\"type\":\"berth\"}}" \
      "$url/orgs/default/runners"
  done
  echo "== $name: get runners (20 runners)"
  wrk -t2 -c8 -d"${SECONDS_EACH}s" --latency -H "Authorization: Bearer $token" \
    "$url/orgs/default/runners" | grep -E "Requests/sec|  50%|  90%|  99%|Non-2xx"
  echo "== $name: create runner"
  wrk -t2 -c8 -d"${SECONDS_EACH}s" --latency -s "$WORK/create.lua" \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    "$url/orgs/default/runners" | grep -E "Requests/sec|  50%|  90%|  99%|Non-2xx"
}

run sqlite ""
start_postgres
runuser -u nobody -- /usr/lib/postgresql/15/bin/createdb -h 127.0.0.1 -p 55432 -U postgres berth 2>/dev/null ||
  /usr/lib/postgresql/15/bin/createdb -h 127.0.0.1 -p 55432 -U postgres berth
run postgres "postgres://postgres@127.0.0.1:55432/berth"
