#!/usr/bin/env bash
# Issue 12: what a native HTTP front would give, measured before anyone builds it into the edge. In one run, on 1 and
# 2 cores (pinned with taskset as wrk.sh does; wrk -t1 on core 0 with the origin):
#   nginx proxy_cache hit          (cache.bench.example.org/static/a.css, as wrk.sh)
#   bare uWS, fixed 1 KB           (ceiling.ts fixed: uWS.js answering without any edge work)
#   uWS + the edge's reads         (ceiling.ts reads: the same after every read the edge makes of uWS per request)
#   edge cache hit                 (the edge, EDGE_WORKERS=cores)
#   native front, 1 KB from a JS Map (native-front.ts: edge-node/native/http-front, accept/parse/write in C, a batch
#                                  of parsed requests per call into JavaScript)
#   native front + the same reads  (native-front.ts reads: the strings the edge reads, made from the shared buffer)
#   nginx plain proxy, edge plain proxy (plain.bench.example.org/page: the proxied rows' baseline in the same run)
#   native front + native origin, JS decides (native-front.ts proxy: the same module's origin side, a pooled
#                                  keep-alive connection per request, the answer copied to the client in C;
#                                  JavaScript only picks the origin and writes the request head)
#   the same, a peek at every reuse (native-front.ts proxy-peek: a recv(MSG_PEEK) per pooled connection taken)
# The ceiling servers run one process per core on one port (SO_REUSEPORT). Each row is measured in turn, the order
# rotated every round; the median of ROUNDS. CPU µs/req: user + system of the row's processes (and their children)
# during the run, over the requests wrk counted.
# Usage: nice -n 5 bash bench/edge-node/wrk-front.sh [rounds (default 3)] [seconds (default 5)] [connections (default 64)]
# ONLY="6 7 8" (row indices, from 0 in the order above) measures those rows alone.
set -euo pipefail
ROUNDS="${1:-3}"
DUR="${2:-5}"
CONNS="${3:-64}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
TMP="$(mktemp -d /tmp/edge-front.XXXXXX)"
PIDS=()
source "$ROOT/bench/edge-node/wrk-common.sh"
trap cleanup EXIT
[ -f "$ROOT/edge-node/native/http-front/build/Release/http_front.node" ] ||
  { echo "the http-front module is not built: npm run setup" >&2; exit 1; }
ORIGIN_PORT=$(free_port); NGINX_PORT=$(free_port); EDGE_PORT=$(free_port); UWS_PORT=$(free_port); FRONT_PORT=$(free_port)
UWS_READS_PORT=$(free_port); FRONT_READS_PORT=$(free_port); FRONT_PROXY_PORT=$(free_port); FRONT_PEEK_PORT=$(free_port)
mkdir -p "$TMP/proxy/cache"
start_origin
(cd "$ROOT" && node --import tsx bench/edge-node/wrk-setup.ts "$TMP/data" "$ORIGIN_PORT")

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
ROWS="$TMP/rows"
: >"$ROWS"
NAMES=("nginx proxy_cache hit" "bare uWS, fixed 1 KB" "uWS + the edge's reads" "edge cache hit" "native front, 1 KB from a JS Map"
  "native front + the same reads" "nginx plain proxy" "edge plain proxy" "native front + native origin, JS decides"
  "the same, a peek at every reuse")
NROWS=${#NAMES[@]}
read -r -a ONLY_ROWS <<<"${ONLY:-$(seq -s' ' 0 $((NROWS - 1)))}"
NONLY=${#ONLY_ROWS[@]}
for cores in 1 2; do
  cpuset=$([ "$cores" = 1 ] && echo 1 || echo 0-1)
  cat >"$TMP/proxy/nginx.conf" <<CONF
user root; worker_processes $cores; pid $TMP/proxy/nginx.pid; error_log $TMP/proxy/error.log warn;
events { worker_connections 8192; }
http { access_log off; keepalive_requests 100000;
$(nginx_proxy_common) }
CONF
  taskset -c "$cpuset" "$NGINX" -p "$TMP/proxy" -c "$TMP/proxy/nginx.conf"
  rm -rf "$TMP/data-edge"; cp -r "$TMP/data" "$TMP/data-edge"
  (cd "$ROOT" && ALLOWED_PRIVATE_NETWORKS=127.0.0.0/8 DATA_DIR="$TMP/data-edge" EDGE_HTTP_PORT=$EDGE_PORT EDGE_HTTPS_PORT=-1 \
    EDGE_WORKERS=$cores SYNC_URL=off CONTROL_PLANE_URL=off LOG_LEVEL=warn exec taskset -c "$cpuset" node --import tsx \
    edge-node/src/main.ts) >"$TMP/edge.log" 2>&1 </dev/null &
  EDGE_PID=$!; PIDS+=($!)
  UWS_PIDS=(); FRONT_PIDS=(); UWS_READS_PIDS=(); FRONT_READS_PIDS=(); FRONT_PROXY_PIDS=(); FRONT_PEEK_PIDS=()
  for _ in $(seq 1 "$cores"); do
    taskset -c "$cpuset" node --import tsx "$ROOT/bench/edge-node/ceiling.ts" fixed "$UWS_PORT" >>"$TMP/uws.log" 2>&1 &
    PIDS+=($!); UWS_PIDS+=($!)
    taskset -c "$cpuset" node --import tsx "$ROOT/bench/edge-node/ceiling.ts" reads "$UWS_READS_PORT" >>"$TMP/uws.log" 2>&1 &
    PIDS+=($!); UWS_READS_PIDS+=($!)
    taskset -c "$cpuset" node --import tsx "$ROOT/bench/edge-node/native-front.ts" "$FRONT_PORT" reuse >>"$TMP/front.log" 2>&1 &
    PIDS+=($!); FRONT_PIDS+=($!)
    taskset -c "$cpuset" node --import tsx "$ROOT/bench/edge-node/native-front.ts" "$FRONT_READS_PORT" reuse reads \
      >>"$TMP/front.log" 2>&1 &
    PIDS+=($!); FRONT_READS_PIDS+=($!)
    taskset -c "$cpuset" node --import tsx "$ROOT/bench/edge-node/native-front.ts" "$FRONT_PROXY_PORT" reuse proxy \
      "$ORIGIN_PORT" >>"$TMP/front.log" 2>&1 &
    PIDS+=($!); FRONT_PROXY_PIDS+=($!)
    taskset -c "$cpuset" node --import tsx "$ROOT/bench/edge-node/native-front.ts" "$FRONT_PEEK_PORT" reuse proxy-peek \
      "$ORIGIN_PORT" >>"$TMP/front.log" 2>&1 &
    PIDS+=($!); FRONT_PEEK_PIDS+=($!)
  done
  for p in "$NGINX_PORT" "$EDGE_PORT" "$UWS_PORT" "$UWS_READS_PORT" "$FRONT_PORT" "$FRONT_READS_PORT" "$FRONT_PROXY_PORT" \
    "$FRONT_PEEK_PORT"; do
    wait_port "$p"
  done
  sleep 1
  NGINX_PID=$(cat "$TMP/proxy/nginx.pid")
  ROW_SPECS=(
    "$NGINX_PORT|cache.bench.example.org|/static/a.css|$NGINX_PID"
    "$UWS_PORT|cache.bench.example.org|/static/a.css|${UWS_PIDS[*]}"
    "$UWS_READS_PORT|cache.bench.example.org|/static/a.css|${UWS_READS_PIDS[*]}"
    "$EDGE_PORT|cache.bench.example.org|/static/a.css|$EDGE_PID"
    "$FRONT_PORT|cache.bench.example.org|/static/a.css|${FRONT_PIDS[*]}"
    "$FRONT_READS_PORT|cache.bench.example.org|/static/a.css|${FRONT_READS_PIDS[*]}"
    "$NGINX_PORT|plain.bench.example.org|/page|$NGINX_PID"
    "$EDGE_PORT|plain.bench.example.org|/page|$EDGE_PID"
    "$FRONT_PROXY_PORT|plain.bench.example.org|/page|${FRONT_PROXY_PIDS[*]}"
    "$FRONT_PEEK_PORT|plain.bench.example.org|/page|${FRONT_PEEK_PIDS[*]}"
  )
  for round in $(seq 1 "$ROUNDS"); do
    for k in $(seq 0 $((NONLY - 1))); do
      i=${ONLY_ROWS[$(((k + round - 1) % NONLY))]}
      IFS='|' read -r port host path pids <<<"${ROW_SPECS[$i]}"
      read -r -a pid_list <<<"$pids"
      echo "$cores|$i|$(run_wrk "$port" "$host" "$path" "${pid_list[@]}")" | tee -a "$ROWS" >&2
    done
  done
  kill "$EDGE_PID" "${UWS_PIDS[@]}" "${UWS_READS_PIDS[@]}" "${FRONT_PIDS[@]}" "${FRONT_READS_PIDS[@]}" "${FRONT_PROXY_PIDS[@]}" "${FRONT_PEEK_PIDS[@]}" \
    "$NGINX_PID" 2>/dev/null || true
  sleep 1
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Medians of $ROUNDS rounds of ${DUR} s, rows in turn (order rotated per round), wrk -t1 -c$CONNS on core 0:"
echo
echo "| cores | row | req/s | p50 ms | p99 ms | CPU µs/req | user | system | req/s ÷ nginx's | nginx CPU ÷ this CPU |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for cores in 1 2; do
  for i in "${ONLY_ROWS[@]}"; do
    col() { awk -F'|' -v c="$cores" -v i="$1" -v k="$2" '$1==c && $2==i {split($3, f, " "); print f[k]}' "$ROWS" | median; }
    anchor=$([ "$i" -ge 6 ] && echo 6 || echo 0)
    rps=$(col "$i" 1); cpu=$(col "$i" 4)
    echo "| $cores | ${NAMES[$i]} | $rps | $(col "$i" 2) | $(col "$i" 3) | $cpu | $(col "$i" 5) | $(col "$i" 6) | $(echo "scale=2; $rps / $(col "$anchor" 1)" | bc) | $(echo "scale=2; $(col "$anchor" 4) / $cpu" | bc) |"
  done
done
