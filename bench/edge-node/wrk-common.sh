# Sourced by wrk.sh and wrk-paired.sh: the pieces both set up the same way (needs TMP, NGINX and, for the nginx
# parts, ORIGIN_PORT and NGINX_PORT set by the caller).

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
