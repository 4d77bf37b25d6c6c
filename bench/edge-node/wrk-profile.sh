#!/usr/bin/env bash
# A CPU profile of the edge under wrk (issue 12): one edge process (EDGE_WORKERS=1, pinned to core 1) started with
# node --cpu-prof against the bench origin (nginx on core 0, as wrk-paired.sh), driven by wrk -t1 on core 0 for a
# warm-up and then SECONDS; the edge is stopped with SIGTERM (the profile is written on exit) and the functions with
# the most self time are printed by cpuprofile-top.ts, leaving out the samples before the measured run (start-up,
# the store's load, the warm-up's compilation) and after it (the exit: pino's fsync of its log file, which under a
# loaded disk took a tenth of an earlier profile and is no request's cost).
# Usage: bash bench/edge-node/wrk-profile.sh [scenario: plain|rules|cache (default plain)] [seconds (default 10)]
#   [connections (default 32)] [rows (default 15)]
# EDGE_ENV: settings for the edge (NAME=value, space-separated), e.g. EDGE_ENV=EDGE_FRONT=native. PROFILE_OUT: keep
#   the main thread's .cpuprofile there (a file name); PROFILE_DIR: keep every thread's there (a directory).
set -euo pipefail
SCENARIO="${1:-plain}"
DUR="${2:-10}"
CONNS="${3:-32}"
ROWS="${4:-15}"
TREE="$(cd "$(dirname "$0")/../.." && pwd)"
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
TMP="$(mktemp -d /tmp/edge-profile.XXXXXX)"
PIDS=()
source "$(dirname "$0")/wrk-common.sh"
trap cleanup EXIT
scenario "$SCENARIO"
ORIGIN_PORT=$(free_port); EDGE_PORT=$(free_port)
start_origin
(cd "$TREE" && node --import tsx bench/edge-node/wrk-setup.ts "$TMP/data" "$ORIGIN_PORT")
mkdir -p "$TMP/prof"
# shellcheck disable=SC2086 # the settings are words
(cd "$TREE" && exec env ${EDGE_ENV:-} ALLOWED_PRIVATE_NETWORKS=127.0.0.0/8 DATA_DIR="$TMP/data" EDGE_HTTP_PORT=$EDGE_PORT \
  EDGE_HTTPS_PORT=-1 EDGE_WORKERS=1 SYNC_URL=off CONTROL_PLANE_URL=off LOG_LEVEL=warn taskset -c 1 \
  node --cpu-prof --cpu-prof-dir="$TMP/prof" --import tsx edge-node/src/main.ts) >"$TMP/edge.log" 2>&1 </dev/null &
EDGE_PID=$!
PIDS+=("$EDGE_PID")
started=$(date +%s.%N)
wait_port "$EDGE_PORT"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
taskset -c 0 wrk -t1 -c"$CONNS" -d2s -H "Host: $host" "http://127.0.0.1:$EDGE_PORT$path" >/dev/null
measured=$(date +%s.%N)
read -r u0 s0 < <(ticks "$EDGE_PID")
taskset -c 0 wrk -t1 -c"$CONNS" -d"${DUR}s" --latency -H "Host: $host" "http://127.0.0.1:$EDGE_PORT$path" | tee "$TMP/wrk.out" |
  grep -E 'Requests/sec|requests in|Non-2xx|  (50|99)%'
read -r u1 s1 < <(ticks "$EDGE_PID")
ended=$(date +%s.%N)
n=$(awk '/requests in/ {print $1}' "$TMP/wrk.out")
echo "edge CPU µs/req: user $(echo "scale=1; ($u1 - $u0) * $TICK_US / $n" | bc), system $(echo "scale=1; ($s1 - $s0) * $TICK_US / $n" | bc) (profiler's cost included)"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
kill -TERM "$EDGE_PID"
for _ in $(seq 1 100); do kill -0 "$EDGE_PID" 2>/dev/null || break; sleep 0.1; done
# One profile per thread (CPU.<date>.<time>.<pid>.<thread>.<seq>): the main thread's is thread 0.
prof=$(ls "$TMP"/prof/*.0.*.cpuprofile | head -1)
echo "profiles: $(cd "$TMP/prof" && ls | tr '\n' ' ')(the main thread's below)"
[ -z "${PROFILE_OUT:-}" ] || cp "$prof" "$PROFILE_OUT"
[ -z "${PROFILE_DIR:-}" ] || { mkdir -p "$PROFILE_DIR" && cp "$TMP"/prof/*.cpuprofile "$PROFILE_DIR/"; }
# The profile starts with the process (give or take its module loading): only the measured run's samples are read.
(cd "$TREE" && node --import tsx bench/edge-node/cpuprofile-top.ts "$prof" "$ROWS" "$(echo "$measured - $started" | bc)" \
  "$(echo "$ended - $started" | bc)")
