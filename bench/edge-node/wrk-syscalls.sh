#!/usr/bin/env bash
# Syscalls per proxied request, by kind (issue 12): the edge (EDGE_WORKERS=CORES) and nginx's proxy_pass
# (worker_processes CORES), both pinned to core 1 (cores 0-1 for 2), in front of the bench origin (nginx on core 0, as
# wrk-paired.sh), each driven in turn by wrk -t1 on core 0: a warm-up, a run without perf (req/s, p50, p99 and CPU µs
# per request: user + system, user, system), then a run while `perf stat` counts the syscalls:sys_enter_* tracepoints
# of the proxy's processes (every thread); the counts over the requests wrk counted. Counts depend little on the
# machine's load (only through batch sizes: a busier proxy finds more ready sockets per epoll_wait); timings do.
# Usage: bash bench/edge-node/wrk-syscalls.sh [tree (default this one)] [scenario: plain|rules|cache (default plain)]
#   [seconds (default 5)] [connections (default 32)] [cores: 1 or 2 (default 1)]
# EDGE_ENV: settings for the edge (NAME=value, space-separated; default EDGE_FRONT=native).
set -euo pipefail
TREE="$(cd "${1:-$(dirname "$0")/../..}" && pwd)"
SCENARIO="${2:-plain}"
DUR="${3:-5}"
CONNS="${4:-32}"
CORES="${5:-1}"
CPUSET=$([ "$CORES" = 1 ] && echo 1 || echo 0-1)
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
TMP="$(mktemp -d /tmp/edge-syscalls.XXXXXX)"
PIDS=()
source "$(dirname "$0")/wrk-common.sh"
trap cleanup EXIT
scenario "$SCENARIO"
ORIGIN_PORT=$(free_port); NGINX_PORT=$(free_port); EDGE_PORT=$(free_port)
mkdir -p "$TMP/proxy/cache"
start_origin
proxy_conf "$CORES"
(cd "$TREE" && node --import tsx bench/edge-node/wrk-setup.ts "$TMP/data" "$ORIGIN_PORT")
# shellcheck disable=SC2086 # the settings are words
(cd "$TREE" && exec env ${EDGE_ENV:-EDGE_FRONT=native} ALLOWED_PRIVATE_NETWORKS=127.0.0.0/8 DATA_DIR="$TMP/data" \
  EDGE_HTTP_PORT=$EDGE_PORT EDGE_HTTPS_PORT=-1 EDGE_WORKERS=$CORES SYNC_URL=off CONTROL_PLANE_URL=off LOG_LEVEL=warn \
  taskset -c "$CPUSET" node --import tsx edge-node/src/main.ts) >"$TMP/edge.log" 2>&1 </dev/null &
EDGE_PID=$!
PIDS+=("$EDGE_PID")
taskset -c "$CPUSET" "$NGINX" -p "$TMP/proxy" -c "$TMP/proxy/nginx.conf"
wait_port "$EDGE_PORT"; wait_port "$NGINX_PORT"
NGINX_PID=$(cat "$TMP/proxy/nginx.pid")
echo "tree $TREE ($(cd "$TREE" && git log --oneline -1 | cut -c1-60)), scenario $SCENARIO, ${DUR} s, $CONNS connections, $CORES core(s)"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"

# count <name> <port> <pids…>: prints the run without perf, then "<name>: <requests>, <total> syscalls/request:
# <kind>=<per request> …" (the kinds above 0.005 per request)
count() {
  local name=$1 port=$2; shift 2
  local pids
  pids=$(for q in "$@"; do echo "$q"; pgrep -P "$q" || true; done | paste -sd,)
  # a run without perf first (after its own warm-up): req/s, latency, CPU µs per request of the processes
  echo "$name without perf (req/s p50 p99 CPU user system): $(DUR=$DUR run_wrk "$port" "$host" "$path" "$@")"
  perf stat -x, -e 'syscalls:sys_enter_*' -p "$pids" -o "$TMP/perf-$name" &
  local perf_pid=$!
  sleep 2 # attaching some 350 tracepoints to every thread takes a while under load: counts were short with 0.3 s
  taskset -c 0 wrk -t1 -c"$CONNS" -d"${DUR}s" -H "Host: $host" "http://127.0.0.1:$port$path" >"$TMP/wrk-$name"
  kill -INT "$perf_pid"
  wait "$perf_pid" || true
  local n bad
  n=$(awk '/requests in/ {print $1}' "$TMP/wrk-$name")
  bad=$(awk '/Non-2xx/ {print $NF}' "$TMP/wrk-$name")
  [ -z "$bad" ] || echo "$name: $bad non-2xx answers" >&2
  awk -F, -v n="$n" -v who="$name" '
    $3 ~ /sys_enter_/ && $1 + 0 > 0 { k = $3; sub(/.*sys_enter_/, "", k); v = $1 / n; t += v; if (v >= 0.005) out = out sprintf(" %s=%.3f", k, v) }
    END { printf "%s: %d requests, %.2f syscalls/request:%s\n", who, n, t, out }' "$TMP/perf-$name"
}
count edge "$EDGE_PORT" "$EDGE_PID"
count nginx "$NGINX_PORT" "$NGINX_PID"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
