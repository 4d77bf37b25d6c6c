#!/usr/bin/env bash
# Fuzzes the control plane's public API with schemathesis (PyPI): every operation of /openapi.json, every check
# (--checks all), the examples, coverage, fuzzing and stateful phases (the stateful phase follows the document's
# OpenAPI links: domain → records → rules). A fresh DATA_DIR (PGlite), one user, one key and one domain; a fixed
# seed and a bounded number of examples keep a run to about 3 minutes. Exits non-zero on any failure. CI runs it
# (.ci/run); the exceptions it takes, each with its reason, are in scripts/api-fuzz/schemathesis.toml.
#
#   scripts/api-fuzz.sh                 # API_FUZZ_EXAMPLES (default 8) examples per operation, seed API_FUZZ_SEED
#   API_FUZZ_LOG=/tmp/calls.log scripts/api-fuzz.sh                    # one line per call made (hooks.py)
#   scripts/api-fuzz.sh --phases stateful --include-path-regex rules   # further arguments go to `st run`
#
# schemathesis (scripts/api-fuzz/requirements.txt) is installed once into a venv under ~/.cache/edge-dns-platform
# (python3 with its venv module needed: Debian package python3-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

# schemathesis and its dependencies at the versions pinned in requirements.txt, in a venv named after that file's
# digest: installed once per version from PyPI, shared by every clone on this machine.
REQUIREMENTS="$ROOT/scripts/api-fuzz/requirements.txt"
PIN=$(grep -o '^schemathesis==[^ ]*' "$REQUIREMENTS")
VENV="${XDG_CACHE_HOME:-$HOME/.cache}/edge-dns-platform/schemathesis-$(sha256sum "$REQUIREMENTS" | cut -c1-12)"
if [ ! -f "$VENV/installed" ]; then
  echo "== installing $PIN into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV" || { echo "python3 -m venv failed: install python3-venv (Debian/Ubuntu)" >&2; exit 1; }
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$REQUIREMENTS"
  # Written last: an interrupted install is not mistaken for a working one.
  touch "$VENV/installed"
fi

WORK=$(mktemp -d /tmp/api-fuzz.XXXXXX)
CP_PID=
cleanup() {
  if [ -n "$CP_PID" ] && kill -0 "$CP_PID" 2>/dev/null; then
    kill -TERM "$CP_PID" 2>/dev/null || true
    wait "$CP_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
API_PORT=$(free_port)
BASE="http://127.0.0.1:$API_PORT"
DOMAIN=fuzz.example.org
EMAIL=fuzz@example.org

export DATA_DIR="$WORK/data" API_HOST=127.0.0.1 API_PORT SYNC_PORT=0 PUBLIC_BASE_URL="$BASE"
# Workflows off: the lifecycle checks answer their documented 503 `workflow service unavailable`.
export TEMPORAL_ADDRESS=''
# The per-key limit (300/min) would turn most of the run into 429s; its behaviour is tested elsewhere.
export RATE_LIMIT_PER_MINUTE=1000000
export LOG_LEVEL=warn

npm run -s admin -- user create "$EMAIL" >/dev/null
KEY=$(npm run -s admin -- key create "$EMAIL" --name api-fuzz)

node --import tsx control-plane/src/main.ts >"$WORK/control-plane.log" 2>&1 &
CP_PID=$!
for _ in $(seq 1 120); do
  curl -fsS -o /dev/null "$BASE/openapi.json" 2>/dev/null && break
  kill -0 "$CP_PID" 2>/dev/null || { cat "$WORK/control-plane.log"; exit 1; }
  sleep 0.5
done
curl -fsS -o /dev/null -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d "{\"name\":\"$DOMAIN\"}" "$BASE/domains/"
# Every rule type and feature on: the free plan would answer 403 to most rule types.
npm run -s admin -- plan set "$DOMAIN" enterprise >/dev/null

export API_FUZZ_BASE_URL="$BASE" API_FUZZ_KEY="$KEY" API_FUZZ_DOMAIN="$DOMAIN" API_FUZZ_ROOT="$ROOT"
export PYTHONPATH="$ROOT/scripts/api-fuzz" SCHEMATHESIS_HOOKS=hooks
status=0
# From $WORK: schemathesis and hypothesis keep their example databases in the working directory.
cd "$WORK"
# Bounded: 8 examples per operation in the fuzzing phase, the coverage phase's own cases, 200 stateful scenarios
# (schemathesis.toml); about 3 minutes on 2 cores. API_FUZZ_TIMEOUT (seconds) stops a run that hangs instead.
ST=("$VENV/bin/st" --config-file "$ROOT/scripts/api-fuzz/schemathesis.toml" run "$BASE/openapi.json"
  --checks all
  --phases examples,coverage,fuzzing,stateful
  --seed "${API_FUZZ_SEED:-20240611}"
  --max-examples "${API_FUZZ_EXAMPLES:-8}"
  --workers 1
  --report junit --report-dir "${API_FUZZ_REPORT_DIR:-$WORK/report}"
  "$@")
echo "== ${ST[*]}"
timeout --kill-after=30 "${API_FUZZ_TIMEOUT:-900}" "${ST[@]}" || status=$?
if [ "$status" -eq 124 ]; then echo "== schemathesis did not finish within API_FUZZ_TIMEOUT=${API_FUZZ_TIMEOUT:-900}s"; fi
if [ "$status" -ne 0 ]; then
  echo "== control-plane errors (last 20; the 503s of the workflow checks left out)"
  grep '"level":50' "$WORK/control-plane.log" | grep -v 'workflow service unavailable' | tail -20 | cut -c1-600 || true
fi
exit "$status"
