"""Schemathesis hooks for scripts/api-fuzz.sh.

The fuzzed domain is a fixed path parameter (schemathesis.toml); when the fuzzer deletes it (DELETE
/domains/{domain} is one of the operations under test), it is created again at once, on the enterprise plan as the
script set it up, so that the operations run after it still find a domain whose plan has every rule type instead of
answering 404 (or 403 for a feature) for the rest of the run.
"""

import os
import subprocess

import requests
import schemathesis

BASE = os.environ["API_FUZZ_BASE_URL"]
KEY = os.environ["API_FUZZ_KEY"]
DOMAIN = os.environ["API_FUZZ_DOMAIN"]
ROOT = os.environ["API_FUZZ_ROOT"]


def restore_domain() -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    requests.post(f"{BASE}/domains/", json={"name": DOMAIN}, headers=headers, timeout=30).raise_for_status()
    # The admin CLI reaches the running control plane through its socket in DATA_DIR (inherited from the script).
    subprocess.run(
        ["npm", "run", "-s", "admin", "--", "plan", "set", DOMAIN, "enterprise"],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )


@schemathesis.hook
def after_call(ctx, case, response):
    if case.method == "DELETE" and case.path == "/domains/{domain}" and response.status_code == 200:
        restore_domain()


# API_FUZZ_LOG=<file>: one line per call (status, operation, time taken, request headers, start of the body), to see what the
# fuzzer really sent when a summary looks too good (a run that only ever got 401 still "passes").
_LOG = os.environ.get("API_FUZZ_LOG")


@schemathesis.hook("after_call")
def log_call(ctx, case, response):
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as f:
            headers = {k: v for k, v in response.request.headers.items() if k.lower() not in ("authorization", "x-api-key")}
            took = f"{response.elapsed:.3f}s"
            f.write(f"{response.status_code} {case.method} {case.formatted_path} {took} {headers} {response.text[:200]!r}\n")
