"""The production server: gunicorn + WhiteNoise + the pooled connection budget, on a live instance."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.turbobase.live import connections_count, suite_is_postgres

pytestmark = pytest.mark.workers

needs_postgres = pytest.mark.skipif(
    not suite_is_postgres(), reason="the connection pool and its budget are PostgreSQL's"
)

# The figures README gives for make run's defaults: web processes × pool (2 × 3), and on the worker
# side the qcluster launcher, every lane's workers + pusher + monitor + sentinel, and each run lane's
# redelivery watch; a run lane's worker holds one more while a delivery's lease heartbeat beats.
WEB_BUDGET = 2 * 3
WORKER_IDLE = 1 + 3 * (2 + 3) + 2
WORKER_BUDGET = WORKER_IDLE + 2 * 2
IDLE_LIMIT = 24


def test_home_page_names_the_instance_and_links_onwards(live):
    home = requests.get(live.url("/"), timeout=30)
    assert home.status_code == 200
    assert home.headers["Content-Type"] == "text/html; charset=utf-8"
    assert "<title>Turbobase</title>" in home.text
    assert 'id="health">Healthy: the ' in home.text
    for href in ("/admin/", "/api/docs", "/api/schema", "/v1/health"):
        assert f'<a href="{href}">' in home.text


def _static_refs(html: str) -> list[str]:
    return sorted(set(re.findall(r'(?:href|src)="(/static/[^"]+)"', html)))


def test_admin_and_api_docs_static_files_are_served_with_debug_off(live):
    login = requests.get(live.url("/admin/login/"), timeout=30)
    docs = requests.get(live.url("/api/docs"), timeout=30)
    assert (login.status_code, docs.status_code) == (200, 200)
    refs = _static_refs(login.text) + _static_refs(docs.text)
    assert any(ref.endswith("base.css") for ref in refs) and any(
        "swagger-ui-bundle.js" in ref for ref in refs
    )
    answers = {ref: requests.get(live.url(ref), timeout=30) for ref in refs}
    assert {ref: a.status_code for ref, a in answers.items()} == {ref: 200 for ref in refs}
    assert all(len(a.content) > 0 for a in answers.values())
    css = answers[next(ref for ref in refs if ref.endswith("base.css"))]
    assert css.headers["Content-Type"].startswith("text/css")
    missing = requests.get(live.url("/static/admin/css/no-such-file.css"), timeout=30)
    assert missing.status_code == 404


def _mixed_request(session: requests.Session, live, token: str, client: int, n: int) -> int:
    """One of the requests ordinary use makes; its status code."""
    auth = {"Authorization": f"Bearer {token}"}
    kind = (client + n) % 8
    if kind == 0:
        return session.get(live.url("/v1/health"), timeout=60).status_code
    if kind == 1:
        return session.get(live.url("/"), timeout=60).status_code
    if kind == 2 and n % 2:  # a connected record: the workers send it to its source
        return session.post(
            live.url("/v1/data/customer"),
            headers=auth,
            timeout=60,
            json={"parent": {"company_name": f"Load {client}-{n}"}},
        ).status_code
    if kind == 2:
        return session.post(
            live.url("/v1/data/legacy_customer"),
            headers=auth,
            timeout=60,
            json={
                "parent": {"company_name": f"Load {client}-{n}", "legacy_id": f"LD-{client}-{n}"}
            },
        ).status_code
    if kind == 3:
        return session.get(
            live.url("/v1/rest/legacy_customer?select=company_name&limit=20"),
            headers=auth,
            timeout=60,
        ).status_code
    if kind == 4:
        return session.get(live.url("/v1/processes/queue"), headers=auth, timeout=60).status_code
    if kind == 5:
        return session.get(
            live.url("/v1/guardrails/held-deletes"), headers=auth, timeout=60
        ).status_code
    if kind == 6 and n < 8:  # a session sign-in (password hashing is slow: a few per client)
        return session.post(
            live.url("/v1/auth/session"), json={"username": "demo", "password": "demo"}, timeout=60
        ).status_code
    return session.get(live.url("/static/admin/css/base.css"), timeout=60).status_code


@needs_postgres
def test_24_clients_480_mixed_requests_no_5xx_within_the_connection_budget(live, admin_token):
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(connections_count(live.database_url))
            time.sleep(0.2)

    def client(i: int) -> list[int]:
        with requests.Session() as session:
            return [_mixed_request(session, live, admin_token, i, n) for n in range(20)]

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with ThreadPoolExecutor(max_workers=24) as pool:
            statuses = [s for answers in pool.map(client, range(24)) for s in answers]
        time.sleep(10)  # keep counting while the workers send the queued customers
    finally:
        done.set()
        sampler.join()
    counts = Counter(statuses)
    assert len(statuses) == 480
    assert not {code: k for code, k in counts.items() if code >= 500}, counts
    assert set(counts) <= {200, 201, 202}, counts
    assert samples and max(samples) <= WEB_BUDGET + WORKER_BUDGET, samples
    assert max(samples) <= IDLE_LIMIT, samples  # no process run in flight here: no heartbeats
    print(
        f"\n480 requests from 24 clients: {dict(counts)}; PostgreSQL connections sampled "
        f"{len(samples)} times, max {max(samples)}"
    )


@needs_postgres
def test_an_idle_instance_holds_at_most_24_connections(live):
    assert requests.get(live.url("/v1/health"), timeout=30).status_code == 200
    time.sleep(3)
    idle = connections_count(live.database_url)
    print(f"\nidle instance: {idle} PostgreSQL connections")
    assert 0 < idle <= IDLE_LIMIT
