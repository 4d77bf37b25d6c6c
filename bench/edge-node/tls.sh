#!/usr/bin/env bash
# TLS handshakes per second with 1,000 certificates loaded: our edge node (certificates in its node store, keys sealed
# under the node token, installed by SNI as the sync client's entries install them) and nginx serving the same 1,000
# certificate/key files, one server block per name, in the same run. Both servers run on core 1 (one edge worker, one
# nginx worker); the client (bench/edge-node/tls-handshakes.ts: random SNI per connection, no session reuse, ECDSA
# P-256 leaves, TLS 1.3) runs on core 0 (CLIENTS processes, CONCURRENCY connections each). Rounds alternate which server goes first. Besides handshakes/s (which on a
# shared machine depend on the share of CPU each process gets), each run reports handshakes per CPU second of the
# server (user + system time of its processes in /proc during the run).
# Usage: bash bench/edge-node/tls.sh [seconds-per-run (default 10)] [concurrency (default 32)] [rounds (default 3)] [certificates (default 1000)] [client processes (default 2)]
# Prints a markdown table (handshakes/s per round, edge/nginx ratio). Installs nginx with apt-get when missing.
set -euo pipefail
DUR="${1:-10}"
CONC="${2:-32}"
ROUNDS="${3:-3}"
COUNT="${4:-1000}"
CLIENTS="${5:-2}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  (apt-get update -qq && apt-get install -y -qq nginx) >/dev/null
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
TMP="$(mktemp -d /tmp/edge-tls.XXXXXX)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$TMP/nginx/nginx.pid" ] && kill "$(cat "$TMP/nginx/nginx.pid")" 2>/dev/null || true
  sleep 0.5
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
wait_port() { for _ in $(seq 1 600); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }
NGINX_PORT=$(free_port); EDGE_HTTPS=$(free_port); EDGE_HTTP=$(free_port)
NODE_TOKEN=$(node -e "console.log(require('crypto').randomBytes(24).toString('base64url'))")
mkdir -p "$TMP/nginx" "$TMP/edge"

t0=$(date +%s)
node --import tsx "$ROOT/bench/edge-node/tls-setup.ts" "$TMP" "$NODE_TOKEN" "$COUNT" "$NGINX_PORT"
echo "setup: $COUNT certificates made and stored in $(( $(date +%s) - t0 )) s" >&2

cat > "$TMP/nginx/nginx.conf" <<CONF
user root; worker_processes 1; pid $TMP/nginx/nginx.pid; error_log $TMP/nginx/error.log warn;
events { worker_connections 8192; }
http { access_log off; server_names_hash_max_size 8192; server_names_hash_bucket_size 64;
  ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache off; ssl_session_tickets off;
  include $TMP/nginx-servers.conf; }
CONF
taskset -c 1 "$NGINX" -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf"

t0=$(date +%s)
NODE_TOKEN=$NODE_TOKEN DATA_DIR="$TMP/edge" EDGE_HTTP_PORT=$EDGE_HTTP EDGE_HTTPS_PORT=$EDGE_HTTPS EDGE_WORKERS=1 SYNC_URL=off CONTROL_PLANE_URL=off LOG_LEVEL=warn \
  taskset -c 1 node --import tsx "$ROOT/edge-node/src/main.ts" >"$TMP/edge.log" 2>&1 &
PIDS+=($!)
wait_port "$EDGE_HTTPS"
wait_port "$NGINX_PORT"

# A process and all its descendants.
tree() { local c; echo "$1"; for c in $(ps -o pid= --ppid "$1" || true); do tree "$c"; done; }
# CPU seconds (user + system) used so far by a process and all its descendants (a server's master/primary and workers).
cpu_s() {
  local total=0 p
  for p in $(tree "$1"); do
    total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "scale=3; $total / $(getconf CLK_TCK)" | bc
}
# "<rate> <errors> <handshakes per server CPU second>" of one run against a port (the client first checks that a
# sample of names gets its own leaf; that check is inside the CPU window, 20 handshakes of thousands).
drive() {
  local before after i clients=()
  before=$(cpu_s "$2")
  for i in $(seq 1 "$CLIENTS"); do
    taskset -c 0 node --import tsx "$ROOT/bench/edge-node/tls-handshakes.ts" "$1" "$TMP" "$DUR" "$CONC" >"$TMP/client.$i" &
    clients+=($!)
  done
  for i in "${clients[@]}"; do wait "$i"; done
  after=$(cpu_s "$2")
  node -e "
    const fs = require('fs');
    const rs = Array.from({ length: Number(process.argv[3]) }, (_, i) => JSON.parse(fs.readFileSync(process.argv[1] + '/client.' + (i + 1), 'utf8')));
    const n = rs.reduce((a, r) => a + r.handshakes, 0), errors = rs.reduce((a, r) => a + r.errors, 0);
    const secs = Math.max(...rs.map((r) => r.seconds)), cpu = Number(process.argv[2]);
    console.log(Math.round(n / secs), errors, cpu > 0 ? Math.round(n / cpu) : 0);
  " "$TMP" "$(echo "$after - $before" | bc)" "$CLIENTS"
}
# Warm-up (and the edge's certificates loaded: the sample check waits for them).
drive "$EDGE_HTTPS" "${PIDS[0]}" >/dev/null; echo "edge ready with certificates $(( $(date +%s) - t0 )) s after start" >&2
drive "$NGINX_PORT" "$(cat "$TMP/nginx/nginx.pid")" >/dev/null
EDGE_RSS_KB=$(for p in $(tree "${PIDS[0]}"); do ps -o rss= -p "$p" || true; done | awk '{s+=$1} END {print s}')
echo "edge processes: $(for p in $(tree "${PIDS[0]}"); do ps -o pid=,args= -p "$p" | cut -c1-60 || true; done | tr '\n' ';')" >&2
echo "edge RSS with $COUNT certificates: $((EDGE_RSS_KB / 1024)) MB (all its processes); nginx: $(( $( (ps -o rss= -p "$(cat "$TMP/nginx/nginx.pid")"; ps -o rss= --ppid "$(cat "$TMP/nginx/nginx.pid")" || true) | awk '{s+=$1} END {print s}') / 1024 )) MB" >&2

NGINX_PID=$(cat "$TMP/nginx/nginx.pid")
echo "| round | edge handshakes/s | nginx handshakes/s | edge/nginx | edge per CPU-s | nginx per CPU-s | edge/nginx per CPU-s | load avg |"
echo "|---|---|---|---|---|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then
    read -r e_rate e_err e_cpu <<<"$(drive "$EDGE_HTTPS" "${PIDS[0]}")"; read -r n_rate n_err n_cpu <<<"$(drive "$NGINX_PORT" "$NGINX_PID")"
  else
    read -r n_rate n_err n_cpu <<<"$(drive "$NGINX_PORT" "$NGINX_PID")"; read -r e_rate e_err e_cpu <<<"$(drive "$EDGE_HTTPS" "${PIDS[0]}")"
  fi
  note=""; [ "$e_err" != 0 ] && note=" (edge errors: $e_err)"; [ "$n_err" != 0 ] && note="$note (nginx errors: $n_err)"
  echo "| $r | $e_rate | $n_rate | $(echo "scale=2; $e_rate / $n_rate" | bc)$note | $e_cpu | $n_cpu | $(echo "scale=2; $e_cpu / $n_cpu" | bc) | $(cut -d' ' -f1 /proc/loadavg) |"
done
