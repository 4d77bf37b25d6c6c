#!/usr/bin/env bash
# Paired wrk runs of two edge builds and nginx (issue 12): the plain proxy, 20 rules (proxied) and the cache hit, on 1
# and 2 cores
# (EDGE_WORKERS / worker_processes, pinned with taskset as wrk.sh does). In each round the three proxies (nginx, the
# edge before, the edge after) are measured AT THE SAME TIME, each by its own wrk (-t1, on core 0 with the origin,
# CONNS connections each) against one origin: on a machine shared with other work they meet the same load, second for
# second, which runs taken in turn did not (their figures moved by more than the difference being measured). The
# figure to compare is CPU time per request (user + system of the proxy's processes during the run, over the requests
# its wrk counted), split into user and system; req/s, p50 and p99 are printed too (each proxy shares its cores with
# the other two, so they are for comparing the three, not absolute), with the load average. The median of ROUNDS.
# Usage: bash bench/edge-node/wrk-paired.sh <before-tree> [rounds (default 5)] [seconds (default 6)] [connections
#   per proxy (default 32)]
#   <before-tree>: a checkout of the code to compare with, with node_modules and the native origin client built
#   (e.g. `git archive <commit> | tar -x -C /tmp/before`, node_modules hard-linked with cp -al, the module's build/
#   copied); "after" is this tree.
# BEFORE_ENV / AFTER_ENV: settings (NAME=value, space-separated) for the edge of that side, e.g. the same tree twice
#   with BEFORE_ENV=EDGE_FRONT=uws AFTER_ENV=EDGE_FRONT=native (the edge on uWS against the edge on the native front);
#   BEFORE_NAME / AFTER_NAME: their names in the table (default before, after).
set -euo pipefail
BEFORE="$(cd "${1:?usage: wrk-paired.sh <before-tree> [rounds] [seconds] [connections]}" && pwd)"
ROUNDS="${2:-5}"
DUR="${3:-6}"
CONNS="${4:-32}"
AFTER="$(cd "$(dirname "$0")/../.." && pwd)"
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
TMP="$(mktemp -d /tmp/edge-paired.XXXXXX)"
PIDS=()
source "$(dirname "$0")/wrk-common.sh"
trap cleanup EXIT
ORIGIN_PORT=$(free_port); NGINX_PORT=$(free_port); BEFORE_PORT=$(free_port); AFTER_PORT=$(free_port)
mkdir -p "$TMP/proxy/cache"
start_origin
(cd "$AFTER" && node --import tsx bench/edge-node/wrk-setup.ts "$TMP/data" "$ORIGIN_PORT")

EDGE_PID=
start_edge() { # <tree> <port> <cores> <cpuset> [NAME=value settings]
  rm -rf "$TMP/data-$2"; cp -r "$TMP/data" "$TMP/data-$2"
  # shellcheck disable=SC2086 # the settings are words
  (cd "$1" && exec env ${5:-} ALLOWED_PRIVATE_NETWORKS=127.0.0.0/8 DATA_DIR="$TMP/data-$2" EDGE_HTTP_PORT=$2 EDGE_HTTPS_PORT=-1 EDGE_WORKERS=$3 \
    SYNC_URL=off CONTROL_PLANE_URL=off LOG_LEVEL=warn taskset -c "$4" node --import tsx edge-node/src/main.ts) \
    >"$TMP/edge-$2.log" 2>&1 </dev/null &
  PIDS+=($!)
  EDGE_PID=$!
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
ROWS="$TMP/rows"
: >"$ROWS"
for cores in 1 2; do
  cpuset=$([ "$cores" = 1 ] && echo 1 || echo 0-1)
  start_edge "$BEFORE" "$BEFORE_PORT" "$cores" "$cpuset" "${BEFORE_ENV:-}"
  BEFORE_PID=$EDGE_PID
  start_edge "$AFTER" "$AFTER_PORT" "$cores" "$cpuset" "${AFTER_ENV:-}"
  AFTER_PID=$EDGE_PID
  proxy_conf "$cores"
  taskset -c "$cpuset" "$NGINX" -p "$TMP/proxy" -c "$TMP/proxy/nginx.conf"
  wait_port "$BEFORE_PORT"; wait_port "$AFTER_PORT"; wait_port "$NGINX_PORT"
  sleep 1
  NGINX_PID=$(cat "$TMP/proxy/nginx.pid")
  for scenario in "plain proxy|plain.bench.example.org|/page" "20 rules|rules.bench.example.org|/plain/x" \
    "cache hit|cache.bench.example.org|/static/a.css"; do
    IFS='|' read -r name host path <<<"$scenario"
    for round in $(seq 1 "$ROUNDS"); do
      waiters=()
      for t in "nginx|$NGINX_PORT|$NGINX_PID" "before|$BEFORE_PORT|$BEFORE_PID" "after|$AFTER_PORT|$AFTER_PID"; do
        IFS='|' read -r who port pid <<<"$t"
        run_wrk "$port" "$host" "$path" "$pid" >"$TMP/out-$who" &
        waiters+=($!)
      done
      wait "${waiters[@]}"
      for who in nginx before after; do echo "$cores|$name|$who|$(cat "$TMP/out-$who")" | tee -a "$ROWS" >&2; done
    done
  done
  kill "$BEFORE_PID" "$AFTER_PID" "$NGINX_PID" 2>/dev/null || true
  sleep 1
  sleep 1
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Medians of $ROUNDS rounds of ${DUR} s, the three proxies at the same time, $CONNS connections each (CPU: user + system µs per request of the proxy's processes):"
echo
echo "| cores | scenario | proxy | req/s | p50 ms | p99 ms | CPU µs/req | user | system | nginx CPU / this CPU |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for cores in 1 2; do
  for name in "plain proxy" "20 rules" "cache hit"; do
    ncpu=$(awk -F'|' -v c="$cores" -v n="$name" '$1==c && $2==n && $3=="nginx" {split($4, f, " "); print f[4]}' "$ROWS" | median)
    for who in nginx before after; do
      col() { awk -F'|' -v c="$cores" -v n="$name" -v w="$who" -v i="$1" '$1==c && $2==n && $3==w {split($4, f, " "); print f[i]}' "$ROWS" | median; }
      cpu=$(col 4)
      label=$who
      [ "$who" = before ] && label="${BEFORE_NAME:-before}"
      [ "$who" = after ] && label="${AFTER_NAME:-after}"
      echo "| $cores | $name | $label | $(col 1) | $(col 2) | $(col 3) | $cpu | $(col 5) | $(col 6) | $(echo "scale=2; $ncpu / $cpu" | bc) |"
    done
  done
done
