# Sourced by wrk.sh and wrk-paired.sh: the pieces both set up the same way (needs TMP, NGINX and, for the nginx
# parts, ORIGIN_PORT and NGINX_PORT set by the caller).

# The exit of wrk-paired.sh and wrk-front.sh (trap cleanup EXIT): stops the processes in PIDS and the nginx of
# $TMP/origin and $TMP/proxy, removes TMP.
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for d in origin proxy; do [ -f "$TMP/$d/nginx.pid" ] && kill "$(cat "$TMP/$d/nginx.pid")" 2>/dev/null || true; done
  sleep 0.5
  rm -rf "$TMP"
}

free_port() { node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }

wait_port() {
  for _ in $(seq 1 300); do (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
  echo "port $1 never opened" >&2
  return 1
}

# The origin both proxies use: nginx answering 1 KB (cacheable for 300 s), pinned to core 0 with wrk.
start_origin() {
  mkdir -p "$TMP/origin"
  local body
  body=$(head -c 1024 /dev/zero | tr '\0' 'a')
  cat >"$TMP/origin/nginx.conf" <<CONF
user root; worker_processes 1; pid $TMP/origin/nginx.pid; error_log $TMP/origin/error.log warn;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 100000;
  server { listen 127.0.0.1:$ORIGIN_PORT; default_type text/plain;
    location / { add_header cache-control "max-age=300"; return 200 "$body"; } } }
CONF
  taskset -c 0 "$NGINX" -p "$TMP/origin" -c "$TMP/origin/nginx.conf"
}

# nginx's side of the plain proxy and the cache hit: the lines of its proxy's http block both scripts share (the
# block is opened by the caller, which may add servers after these).
nginx_proxy_common() {
  cat <<CONF
  proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host \$host;
  proxy_set_header X-Forwarded-For \$remote_addr; proxy_set_header X-Forwarded-Proto \$scheme; proxy_set_header X-Forwarded-Host \$host;
  proxy_cache_path $TMP/proxy/cache levels=1:2 keys_zone=edge:64m max_size=100m inactive=3d use_temp_path=off;
  upstream origin { server 127.0.0.1:$ORIGIN_PORT; keepalive 256; }
  server { listen 127.0.0.1:$NGINX_PORT; server_name plain.bench.example.org; location / { proxy_pass http://origin; } }
  server { listen 127.0.0.1:$NGINX_PORT; server_name cache.bench.example.org;
    location /static/ { proxy_cache edge; proxy_cache_valid 200 300s; add_header x-cache-status \$upstream_cache_status; proxy_pass http://origin; }
    location / { proxy_pass http://origin; } }
CONF
}

# nginx's side of the "20 rules, proxied" row (the 20 rules of wrk-setup.ts on rules.bench): a server block for the
# proxy's http block (needs NGINX_PORT and the `origin` upstream and `edge` cache zone of nginx_proxy_common).
nginx_rules_server() {
  local redirects="" rewrites="" routes="" caches=""
  for i in 1 2 3 4 5 6; do redirects+="location /r$i/ { rewrite ^/r$i/(.*)\$ /new$i/\$1 redirect; } "; done
  for i in 1 2 3 4; do rewrites+="location /w$i/ { rewrite ^/w$i/(.*)\$ /internal/\$1 break; proxy_pass http://origin; } "; done
  for i in 1 2 3; do routes+="location /a$i/ { proxy_pass http://origin; } "; done
  for i in 1 2 3; do caches+="location /s$i/ { proxy_cache edge; proxy_cache_valid 200 300s; proxy_pass http://origin; } "; done
  cat <<CONF
  server { listen 127.0.0.1:$NGINX_PORT; server_name rules.bench.example.org;
    deny 198.51.100.0/24; deny 203.0.113.7; allow all;
    add_header x-edge 1;
    $redirects $rewrites $routes $caches
    location /h/ { proxy_set_header x-h 1; proxy_pass http://origin; }
    location /admin/ { return 403; }
    location / { proxy_pass http://origin; } }
CONF
}

# nginx's proxy (the plain proxy, the cache hit and 20 rules) with worker_processes $1, in $TMP/proxy/nginx.conf.
proxy_conf() {
  cat >"$TMP/proxy/nginx.conf" <<CONF
user root; worker_processes $1; pid $TMP/proxy/nginx.pid; error_log $TMP/proxy/error.log warn;
events { worker_connections 8192; }
http { access_log off; keepalive_requests 100000;
$(nginx_proxy_common)
$(nginx_rules_server) }
CONF
}

# The bench's scenarios by name (wrk-profile.sh, wrk-syscalls.sh): sets host and path.
scenario() {
  case "$1" in
    plain) host=plain.bench.example.org path=/page ;;
    rules) host=rules.bench.example.org path=/plain/x ;;
    cache) host=cache.bench.example.org path=/static/a.css ;;
    *) echo "unknown scenario $1 (plain, rules, cache)" >&2; exit 2 ;;
  esac
}

# Paired and alternated runs (wrk-paired.sh, wrk-front.sh): run_wrk needs CONNS and DUR; wrk -t1 on core 0.
# User and system ticks of the given processes and their children.
ticks() {
  local u=0 s=0 p a b
  for p in "$@" $(for q in "$@"; do pgrep -P "$q" || true; done); do
    [ -r "/proc/$p/stat" ] || continue
    read -r a b < <(awk '{print $14, $15}' "/proc/$p/stat")
    u=$((u + a)); s=$((s + b))
  done
  echo "$u $s"
}
TICK_US=$((1000000 / $(getconf CLK_TCK)))
to_ms() { local v=$1; case "$v" in *us) echo "scale=3; ${v%us}/1000" | bc;; *ms) echo "${v%ms}";; *s) echo "scale=1; ${v%s}*1000" | bc;; *) echo "$v";; esac; }
# run_wrk <port> <host> <path> <pids…>: "<req/s> <p50 ms> <p99 ms> <CPU µs/req> <user> <system>"
run_wrk() {
  local port=$1 host=$2 path=$3; shift 3
  taskset -c 0 wrk -t1 -c"$CONNS" -d2s -H "Host: $host" "http://127.0.0.1:$port$path" >/dev/null 2>&1 || true
  local u0 s0 u1 s1 out
  read -r u0 s0 < <(ticks "$@")
  out=$(taskset -c 0 wrk -t1 -c"$CONNS" -d"${DUR}s" --latency -H "Host: $host" "http://127.0.0.1:$port$path")
  read -r u1 s1 < <(ticks "$@")
  local n rps p50 p99 bad
  n=$(echo "$out" | awk '/requests in/ {print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1=="50%" {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  bad=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
  [ -z "$bad" ] || echo "port $port: $bad non-2xx answers" >&2
  echo "$rps $(to_ms "$p50") $(to_ms "$p99") $(echo "scale=1; ($u1 - $u0 + $s1 - $s0) * $TICK_US / $n" | bc) $(echo "scale=1; ($u1 - $u0) * $TICK_US / $n" | bc) $(echo "scale=1; ($s1 - $s0) * $TICK_US / $n" | bc)"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
