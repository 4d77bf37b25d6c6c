"""Schemathesis hooks for scripts/api-fuzz.sh.

The fuzzed domain is a fixed path parameter (schemathesis.toml); when the fuzzer deletes it (DELETE
/domains/{domain} is one of the operations under test), it is created again at once so that the operations run
after it still find a domain to work on instead of answering 404 for the rest of the run.
"""

import os

import requests
import schemathesis

BASE = os.environ["API_FUZZ_BASE_URL"]
KEY = os.environ["API_FUZZ_KEY"]
DOMAIN = os.environ["API_FUZZ_DOMAIN"]


def restore_domain() -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    requests.post(f"{BASE}/domains/", json={"name": DOMAIN}, headers=headers, timeout=30)


@schemathesis.hook
def after_call(ctx, case, response):
    if case.method == "DELETE" and case.path == "/domains/{domain}" and response.status_code == 200:
        restore_domain()
