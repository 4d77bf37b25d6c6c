#!/usr/bin/env bash
# wrk through our edge node and through nginx doing the same work, in the same run: plain proxy, a cache hit, a
# proxied request through ~20 rules, a proxied request (a query with an apostrophe) through the WAF at paranoia
# 1 (nginx: ModSecurity v3 with the OWASP CRS at paranoia 1, Debian's libnginx-mod-http-modsecurity and
# modsecurity-crs), and the same request with a browser's headers through a rule of every security type
# (security-rules.ts; nginx: ModSecurity + CRS PL1, limit_req, map/geo deny rules standing for bot_route,
# fingerprint and the 20 custom rules, gzip); on 1 and 2 cores (EDGE_WORKERS / worker_processes, pinned with taskset).
# Issue 12's ceiling rows follow in the same run (ceiling.ts): (a) bare uWS answering a fixed 1 KB body, set against
# nginx's cache hit, and (b) bare uWS in front of a minimal net.Socket origin client (no rules, no logs), set against
# nginx's plain proxy; as many processes as cores, on one port (SO_REUSEPORT), pinned like the edge.
# The edge runs the origin client EDGE_ORIGIN_CLIENT names (default native); one more row measures the plain proxy on
# an edge with the TypeScript origin client (EDGE_ORIGIN_CLIENT=js) in the same run.
# Usage: bash bench/edge-node/wrk.sh [seconds-per-run (default 8)] [connections (default 64)]
# Prints a markdown table (requests/s, p99, CPU time per request, edge/nginx ratio). CPU µs/req is the user + system
# time the proxy's processes (edge: the process and its workers; nginx: master and workers) spent during the measured
# run, divided by the requests wrk counted: on a shared machine it moves far less than req/s, which counts the time
# spent waiting for a core. Installs wrk and nginx with apt-get when missing.
# EDGE_CPU_PROF=<dir>: afterwards, one edge (1 core) per row of the plain proxy and the cache hit under wrk with
# node --cpu-prof, the profiles kept in <dir> and their top 10 functions by self time printed (cpuprofile-top.ts).
# EDGE_CPU_PROF_ONLY=<rows>: with EDGE_CPU_PROF, the profiles only (no table), of the rows named, comma-separated,
# among plain-proxy, cache-hit and 20-rules (e.g. EDGE_CPU_PROF_ONLY=20-rules); all three when it is "all".
set -euo pipefail
DUR="${1:-8}"
CONNS="${2:-64}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
for pkg in wrk nginx; do
  if ! command -v "$pkg" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$pkg" ]; then
    (apt-get update -qq && apt-get install -y -qq "$pkg") >/dev/null
  fi
done
MODSEC=/usr/lib/nginx/modules/ngx_http_modsecurity_module.so
if [ ! -f "$MODSEC" ] || [ ! -d /usr/share/modsecurity-crs/rules ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libnginx-mod-http-modsecurity modsecurity-crs) >/dev/null
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
TMP="$(mktemp -d /tmp/edge-wrk.XXXXXX)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$TMP/origin/nginx.pid" ] && kill "$(cat "$TMP/origin/nginx.pid")" 2>/dev/null || true
  [ -f "$TMP/proxy/nginx.pid" ] && kill "$(cat "$TMP/proxy/nginx.pid")" 2>/dev/null || true
  sleep 0.5
  rm -rf "$TMP"
}
trap cleanup EXIT

source "$ROOT/bench/edge-node/wrk-common.sh"
ORIGIN_PORT=$(free_port); NGINX_PORT=$(free_port); EDGE_PORT=$(free_port); FIXED_PORT=$(free_port); MINI_PORT=$(free_port)
JS_EDGE_PORT=$(free_port)
mkdir -p "$TMP/proxy/cache" "$TMP/edge"
start_origin

# nginx standing for the edge's rule of every security type (secure.bench; bench/edge-node/security-rules.ts): maps
# and geo blocks evaluated on every request (nginx evaluates a map when `if` reads it), one 403 when any says so.
# bot_route: the user-agent tokens of the edge's AI crawler and automation classes (nginx verifies no crawler by DNS);
# fingerprint: 100 exact values of User-Agent|Accept-Language (nginx has no JA4H); custom rules: the 20 expressions as
# geo/map entries; captcha: locations the request does not take (nginx has no challenge); rate_limit: limit_req at
# 1,000,000 r/s with a burst it never reaches; optimize: gzip (wrk asks for no coding, as it asks the edge).
security_http_conf() {
  local listed="" fps="" php="" cookies=""
  for i in $(seq 0 49); do listed+="203.0.$i.0/24 1; "; done
  for i in $(seq 0 99); do fps+="\"fp-agent-$i|xx-$i\" 1; "; done
  for i in 0 2 4 6 8; do php+="\"~^/p$i/.*\\.php\$\" 1; "; done
  for i in 1 3 5 7 9; do cookies+="\"~banned$i=\" 1; "; done
  cat <<CONF
  geo \$sec_internal { default 0; 10.0.0.0/8 1; 192.168.0.0/16 1; }
  geo \$sec_listed { default 0; $listed}
  map \$http_user_agent \$sec_bad_ua { default 0; "" 1;
    "~*(gptbot|chatgpt-user|oai-searchbot|claudebot|ccbot|perplexitybot|bytespider|amazonbot|meta-externalagent)" 1;
    "~*(curl|wget|python-requests|go-http-client|headlesschrome|sqlmap|nikto|bot|crawler|spider)" 1; }
  map "\$http_user_agent|\$http_accept_language" \$sec_bad_fp { default 0; $fps}
  map "\$sec_internal\$uri" \$sec_admin { default 0; "~*^0/admin/" 1; }
  map \$args \$sec_args { default 0; "~*union.+select" 1; "~^.{1025}" 1; }
  map "\$request_method:\$uri" \$sec_method { default 0; "~^(PUT|DELETE|PATCH):(?!/api/)" 1; }
  map \$uri \$sec_uri { default 0; /wp-login.php 1; /xmlrpc.php 1; $php}
  map \$http_referer \$sec_ref { default 0; "~spam\\.example" 1; }
  map "\$http_x_api_key:\$uri" \$sec_key { default 0; "~^:/api/" 1; }
  map \$http_cookie \$sec_cookie { default 0; $cookies}
  map "\$http_x_bad_1\$http_x_bad_3\$http_x_bad_5\$http_x_bad_7\$http_x_bad_9" \$sec_bad_header { default 1; "" 0; }
  map "\$sec_bad_ua\$sec_bad_fp\$sec_admin\$sec_args\$sec_listed\$sec_method\$sec_uri\$sec_ref\$sec_key\$sec_cookie\$sec_bad_header" \$sec_block {
    default 1; "~^0+\$" 0; }
  limit_req_zone \$binary_remote_addr zone=sec:10m rate=1000000r/s;
  server { listen 127.0.0.1:$NGINX_PORT; server_name secure.bench.example.org;
    modsecurity on; modsecurity_rules_file $TMP/proxy/modsec.conf;
    limit_req zone=sec burst=100000 nodelay;
    gzip on; gzip_min_length 1024; gzip_types text/plain text/css application/json application/javascript;
    if (\$sec_block) { return 403; }
    location /login { return 403; }
    location /account/ { return 403; }
    location / { proxy_pass http://origin; } }
CONF
}

# nginx doing what the edge does: the same 20 rules on rules.bench, a proxy_cache on cache.bench.
nginx_conf() {
  local workers=$1
  cat > "$TMP/proxy/modsec.conf" <<CONF
SecRuleEngine On
SecRequestBodyAccess On
SecRequestBodyNoFilesLimit 131072
SecRequestBodyLimitAction ProcessPartial
SecResponseBodyAccess Off
SecAuditEngine Off
SecTmpDir $TMP/proxy
SecDataDir $TMP/proxy
SecAction "id:900000,phase:1,nolog,pass,t:none,setvar:tx.paranoia_level=1"
Include /etc/modsecurity/crs/crs-setup.conf
Include /usr/share/modsecurity-crs/rules/*.conf
CONF
  cat > "$TMP/proxy/nginx.conf" <<CONF
load_module $MODSEC;
user root; worker_processes $workers; pid $TMP/proxy/nginx.pid; error_log $TMP/proxy/error.log warn;
events { worker_connections 8192; }
http { access_log off; keepalive_requests 100000;
$(nginx_proxy_common)
$(security_http_conf)
  server { listen 127.0.0.1:$NGINX_PORT; server_name waf.bench.example.org;
    modsecurity on; modsecurity_rules_file $TMP/proxy/modsec.conf;
    location / { proxy_pass http://origin; } }
$(nginx_rules_server) }
CONF
}

node --import tsx "$ROOT/bench/edge-node/wrk-setup.ts" "$TMP/edge" "$ORIGIN_PORT"
# The edge runs the native origin client (EDGE_ORIGIN_CLIENT, default native here); a second edge on the TypeScript
# one (its own copy of the data) answers the extra plain-proxy row, so both clients are measured in one run.
EDGE_CLIENT="${EDGE_ORIGIN_CLIENT:-native}"
cp -r "$TMP/edge" "$TMP/edge-js"

# The browser's headers of the "every security type" row (security-rules.ts SECURITY_HEADERS), as wrk -H arguments.
BROWSER_H=()
while IFS= read -r h; do BROWSER_H+=(-H "$h"); done <"$TMP/edge/security-headers"

# CPU ticks (user + system, /proc/<pid>/stat) of the given processes and their children.
cpu_ticks() {
  local total=0 p
  for p in "$@" $(for q in "$@"; do pgrep -P "$q"; done); do
    [ -r "/proc/$p/stat" ] && total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "$total"
}
TICK_US=$((1000000 / $(getconf CLK_TCK)))

# wrk -t1 on core 0 (with the origin); prints "<req/s> <p99 ms> <non-2xx> <CPU µs/req>", the CPU of the processes
# named by the 5th argument (space-separated pids; their children count too). A 4th argument `browser` adds BROWSER_H.
run_wrk() {
  local port=$1 host=$2 path=$3 extra=() pids
  read -r -a pids <<<"${5:-}"
  [ "${4:-}" = browser ] && extra=("${BROWSER_H[@]}")
  taskset -c 0 wrk -t1 -c"$CONNS" -d2s -H "Host: $host" "${extra[@]}" "http://127.0.0.1:$port$path" >/dev/null 2>&1 || true  # warm-up
  local out before after
  before=$(cpu_ticks "${pids[@]}")
  out=$(taskset -c 0 wrk -t1 -c"$CONNS" -d"${DUR}s" --latency -H "Host: $host" "${extra[@]}" "http://127.0.0.1:$port$path")
  after=$(cpu_ticks "${pids[@]}")
  local rps p99 requests
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  requests=$(echo "$out" | awk '/requests in/ {print $1}')
  local non2xx
  non2xx=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
  echo "$rps $(to_ms "$p99") ${non2xx:-0} $(echo "scale=1; ($after - $before) * $TICK_US / $requests" | bc)"
}
to_ms() { local v=$1; case "$v" in *us) echo "scale=3; ${v%us}/1000" | bc;; *ms) echo "${v%ms}";; *s) echo "scale=1; ${v%s}*1000" | bc;; *) echo "$v";; esac; }

probe() { curl -s -o /dev/null -w '%{http_code}' -H "Host: secure.bench.example.org" "$@"; }

echo "| cores | scenario | edge req/s | edge p99 ms | edge CPU µs/req | nginx req/s | nginx p99 ms | nginx CPU µs/req | edge/nginx |"
echo "|---|---|---|---|---|---|---|---|---|"
for cores in $([ -n "${EDGE_CPU_PROF_ONLY:-}" ] || echo 1 2); do
  cpuset=$([ "$cores" = 1 ] && echo 1 || echo 0-1)
  # Our edge node.
  ALLOWED_PRIVATE_NETWORKS=127.0.0.0/8 DATA_DIR="$TMP/edge" EDGE_HTTP_PORT=$EDGE_PORT EDGE_HTTPS_PORT=-1 EDGE_WORKERS=$cores SYNC_URL=off CONTROL_PLANE_URL=off LOG_LEVEL=warn EDGE_ORIGIN_CLIENT=$EDGE_CLIENT \
    taskset -c "$cpuset" node --import tsx "$ROOT/edge-node/src/main.ts" >"$TMP/edge.log" 2>&1 &
  PIDS+=($!)
  EDGE_PID=$!
  ALLOWED_PRIVATE_NETWORKS=127.0.0.0/8 DATA_DIR="$TMP/edge-js" EDGE_HTTP_PORT=$JS_EDGE_PORT EDGE_HTTPS_PORT=-1 EDGE_WORKERS=$cores SYNC_URL=off CONTROL_PLANE_URL=off LOG_LEVEL=warn EDGE_ORIGIN_CLIENT=js \
    taskset -c "$cpuset" node --import tsx "$ROOT/edge-node/src/main.ts" >"$TMP/edge-js.log" 2>&1 &
  PIDS+=($!)
  JS_EDGE_PID=$!
  wait_port "$EDGE_PORT"
  wait_port "$JS_EDGE_PORT"
  sleep 1
  nginx_conf "$cores"
  taskset -c "$cpuset" "$NGINX" -p "$TMP/proxy" -c "$TMP/proxy/nginx.conf"
  wait_port "$NGINX_PORT"
  # The ceiling rows' servers, one process per core on one port each (SO_REUSEPORT), pinned like the edge.
  FIXED_PIDS=(); MINI_PIDS=()
  for _ in $(seq 1 "$cores"); do
    taskset -c "$cpuset" node --import tsx "$ROOT/bench/edge-node/ceiling.ts" fixed "$FIXED_PORT" >>"$TMP/ceiling.log" 2>&1 &
    PIDS+=($!); FIXED_PIDS+=($!)
    taskset -c "$cpuset" node --import tsx "$ROOT/bench/edge-node/ceiling.ts" proxy "$MINI_PORT" "$ORIGIN_PORT" >>"$TMP/ceiling.log" 2>&1 &
    PIDS+=($!); MINI_PIDS+=($!)
  done
  wait_port "$FIXED_PORT"; wait_port "$MINI_PORT"
  # Both sides act on the security row's rules: a scripted client and an attack refused, the browser served.
  for port in "$EDGE_PORT" "$NGINX_PORT"; do
    got="$(probe -A 'curl/8.5.0' "http://127.0.0.1:$port/search?q=x") $(probe "${BROWSER_H[@]}" "http://127.0.0.1:$port/search?q=1%27%20union%20select%20password%20from%20users--") $(probe "${BROWSER_H[@]}" "http://127.0.0.1:$port/wp-login.php") $(probe "${BROWSER_H[@]}" "http://127.0.0.1:$port/search?q=select+a+plan&name=O%27Brien")"
    [ "$got" = "403 403 403 200" ] || { echo "port $port: the security row's probes answered $got, not 403 403 403 200" >&2; exit 1; }
  done
  for scenario in "plain proxy|plain.bench.example.org|/page" "cache hit|cache.bench.example.org|/static/a.css" "20 rules, proxied|rules.bench.example.org|/plain/x" "WAF PL1, proxied (nginx: ModSecurity + CRS)|waf.bench.example.org|/search?q=select+a+plan&name=O%27Brien" \
    "every security type, proxied (nginx: ModSecurity + CRS, limit_req, maps)|secure.bench.example.org|/search?q=select+a+plan&name=O%27Brien|browser"; do
    IFS='|' read -r name host path headers <<<"$scenario"
    read -r e_rps e_p99 e_bad e_cpu <<<"$(run_wrk "$EDGE_PORT" "$host" "$path" "$headers" "$EDGE_PID")"
    read -r n_rps n_p99 n_bad n_cpu <<<"$(run_wrk "$NGINX_PORT" "$host" "$path" "$headers" "$(cat "$TMP/proxy/nginx.pid")")"
    ratio=$(echo "scale=2; $e_rps / $n_rps" | bc)
    note=""; [ "$e_bad" != 0 ] && note=" (edge non-2xx: $e_bad)"; [ "$n_bad" != 0 ] && note="$note (nginx non-2xx: $n_bad)"
    echo "| $cores | $name | $e_rps | $e_p99 | $e_cpu | $n_rps | $n_p99 | $n_cpu | ${ratio}$note |"
    case "$name" in "plain proxy") NGINX_PLAIN="$n_rps $n_p99 $n_cpu";; "cache hit") NGINX_HIT="$n_rps $n_p99 $n_cpu";; esac
  done
  # The plain proxy again on the edge with the TypeScript origin client, against nginx's plain proxy above.
  read -r n_rps n_p99 n_cpu <<<"$NGINX_PLAIN"
  read -r j_rps j_p99 j_bad j_cpu <<<"$(run_wrk "$JS_EDGE_PORT" plain.bench.example.org /page "" "$JS_EDGE_PID")"
  note=""; [ "$j_bad" != 0 ] && note=" (non-2xx: $j_bad)"
  echo "| $cores | plain proxy, EDGE_ORIGIN_CLIENT=js (nginx: its plain proxy above) | $j_rps | $j_p99 | $j_cpu | $n_rps | $n_p99 | $n_cpu | $(echo "scale=2; $j_rps / $n_rps" | bc)$note |"
  kill "$JS_EDGE_PID" 2>/dev/null || true
  wait "$JS_EDGE_PID" 2>/dev/null || true
  for ceiling in "ceiling (a): bare uWS, fixed 1 KB (nginx: its cache hit above)|$FIXED_PORT|$NGINX_HIT|${FIXED_PIDS[*]}" \
    "ceiling (b): bare uWS + minimal net.Socket origin client (nginx: its plain proxy above)|$MINI_PORT|$NGINX_PLAIN|${MINI_PIDS[*]}"; do
    IFS='|' read -r name port anchor pids <<<"$ceiling"
    read -r n_rps n_p99 n_cpu <<<"$anchor"
    read -r c_rps c_p99 c_bad c_cpu <<<"$(run_wrk "$port" plain.bench.example.org /page "" "$pids")"
    note=""; [ "$c_bad" != 0 ] && note=" (non-2xx: $c_bad)"
    echo "| $cores | $name | $c_rps | $c_p99 | $c_cpu | $n_rps | $n_p99 | $n_cpu | $(echo "scale=2; $c_rps / $n_rps" | bc)$note |"
  done
  for p in "${FIXED_PIDS[@]}" "${MINI_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  kill "$EDGE_PID" 2>/dev/null || true
  wait "$EDGE_PID" 2>/dev/null || true
  kill "$(cat "$TMP/proxy/nginx.pid")" 2>/dev/null || true
  sleep 1
done

if [ -n "${EDGE_CPU_PROF:-}" ]; then
  # One edge per profiled row (1 core, as the 1-core rows): the profile covers the warm-up and the measured run;
  # the main thread's profile is kept (thread 0: tsx loads modules on a thread of its own, profiled apart).
  mkdir -p "$EDGE_CPU_PROF"
  for scenario in "plain-proxy|plain.bench.example.org|/page" "cache-hit|cache.bench.example.org|/static/a.css" \
    "20-rules|rules.bench.example.org|/plain/x"; do
    IFS='|' read -r name host path <<<"$scenario"
    case ",${EDGE_CPU_PROF_ONLY:-plain-proxy,cache-hit}," in *",$name,"* | ",all,") ;; *) continue ;; esac
    ALLOWED_PRIVATE_NETWORKS=127.0.0.0/8 DATA_DIR="$TMP/edge" EDGE_HTTP_PORT=$EDGE_PORT EDGE_HTTPS_PORT=-1 EDGE_WORKERS=1 SYNC_URL=off CONTROL_PLANE_URL=off LOG_LEVEL=warn EDGE_ORIGIN_CLIENT=$EDGE_CLIENT \
      taskset -c 1 node --cpu-prof --cpu-prof-dir="$TMP/prof-$name" --import tsx "$ROOT/edge-node/src/main.ts" >"$TMP/edge.log" 2>&1 &
    EDGE_PID=$!
    PIDS+=($EDGE_PID)
    wait_port "$EDGE_PORT"
    sleep 1
    read -r e_rps e_p99 _ e_cpu <<<"$(run_wrk "$EDGE_PORT" "$host" "$path" "" "$EDGE_PID")"
    kill "$EDGE_PID"; wait "$EDGE_PID" 2>/dev/null || true
    cp "$TMP/prof-$name"/CPU.*.*.*.0.*.cpuprofile "$EDGE_CPU_PROF/$name.cpuprofile"
    echo
    echo "CPU profile, $name ($e_rps req/s, p99 $e_p99 ms, $e_cpu CPU µs/req under the profiler): $EDGE_CPU_PROF/$name.cpuprofile"
    node --import tsx "$ROOT/bench/edge-node/cpuprofile-top.ts" "$EDGE_CPU_PROF/$name.cpuprofile" 10
  done
fi
