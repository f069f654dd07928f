"""Deploy compiles in compiler child processes: the web process keeps answering, and a file or a
deploy over the size or compile-time limit is refused by name, storing nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import requests

from extensions.lint import MAX_BUNDLE_CHARS
from extensions.models import ExtensionModule, ExtensionVersion
from extensions.store import store_forget
from extensions.transpile import MAX_SOURCE_CHARS, compiles_in_flight
from kernel.models import token_issue
from tests.conftest import make_user

ENTRY = "processes/big.ts"


@pytest.fixture(autouse=True)
def _isolated() -> Iterator[None]:
    yield
    store_forget()


def big_process(chars: int, *, process_id: str = "acme:big") -> str:
    """A valid process padded with small exported helpers up to ``chars`` characters."""
    head = (
        "import { defineProcess } from '@turbobase/extensions';\n"
        "export default defineProcess({\n"
        f"  id: '{process_id}',\n"
        "  input: { type: 'object' },\n"
        "  steps: [{ id: 'so', recordType: 'salesOrder',\n"
        "    build: (ctx: any) => ({ parent: { memo: String(helper0(1)) } }) }],\n"
        "});\n"
    )
    parts = [head]
    size, index = len(head), 0
    while size < chars:
        line = f"export function helper{index}(x: number): number {{ return x * {index} + 1; }}\n"
        parts.append(line)
        size, index = size + len(line), index + 1
    return "".join(parts)


def counts() -> tuple[int, int]:
    return ExtensionModule.objects.count(), ExtensionVersion.objects.count()


@pytest.mark.django_db(transaction=True)
def test_health_is_answered_while_a_90k_module_compiles(live_server):
    owner = make_user("ops", admin=True)
    _, raw = token_issue(user=owner, scopes=["extensions:deploy"])
    body = {"entry": ENTRY, "files": {ENTRY: big_process(90_000)}}
    deployed: dict[str, requests.Response] = {}

    def deploy() -> None:
        deployed["response"] = requests.post(
            f"{live_server.url}/v1/extensions",
            json=body,
            timeout=300,
            headers={"Authorization": f"Bearer {raw}"},
        )

    thread = threading.Thread(target=deploy)
    thread.start()
    # Health asked again and again while the deploy is in flight; each answer is noted with
    # whether a compile was still running when it came back. Compiling in the request thread
    # (holding the GIL for the whole compile) would leave no answer inside a compile.
    answers: list[tuple[int, bool, float]] = []
    while thread.is_alive():
        asked = time.perf_counter()
        health = requests.get(f"{live_server.url}/v1/health", timeout=60)
        answers.append((health.status_code, compiles_in_flight() > 0, time.perf_counter() - asked))
    thread.join()

    assert deployed["response"].status_code == 201, deployed["response"].content
    assert {status for status, _, _ in answers} == {200}
    during_compile = [seconds for _, compiling, seconds in answers if compiling]
    assert len(during_compile) >= 3
    print(
        f"\n/v1/health during a 90k deploy: {len(answers)} answers, "
        f"slowest {max(s for _, _, s in answers) * 1000:.0f} ms"
    )


@pytest.mark.django_db
def test_a_file_over_the_size_limit_is_refused_naming_it(admin_api):
    source = "//" + "x" * MAX_SOURCE_CHARS

    res = admin_api.post(
        "/v1/extensions", {"entry": ENTRY, "files": {ENTRY: source}}, format="json"
    )

    assert res.status_code == 400
    assert res.json() == {
        "error": "invalid_extension",
        "rejection": {
            "code": "EXTENSION_TOO_LARGE",
            "field": f"files.{ENTRY}",
            "message": f"{ENTRY} is {MAX_SOURCE_CHARS + 2} characters, over the limit of "
            f"{MAX_SOURCE_CHARS} characters per file",
        },
        "limit": {"maxChars": MAX_SOURCE_CHARS},
    }
    assert counts() == (0, 0)


@pytest.mark.django_db
def test_a_deploy_over_the_total_size_limit_is_refused_naming_files(admin_api):
    per_file = MAX_BUNDLE_CHARS // 4
    files = {f"processes/part{i}.ts": "//" + "x" * per_file for i in range(4)}
    files[ENTRY] = big_process(1_000)

    res = admin_api.post("/v1/extensions", {"entry": ENTRY, "files": files}, format="json")

    assert res.status_code == 400
    body = res.json()
    assert body["rejection"]["code"] == "EXTENSION_TOO_LARGE"
    assert body["rejection"]["field"] == "files"
    assert body["limit"] == {"maxChars": MAX_BUNDLE_CHARS}
    assert (
        f"over the limit of {MAX_BUNDLE_CHARS} characters per deploy"
        in body["rejection"]["message"]
    )
    assert counts() == (0, 0)


@pytest.mark.django_db
def test_a_compile_past_the_time_limit_is_refused_naming_the_file(admin_api, settings):
    settings.EXTENSIONS_DEPLOY_COMPILE_MS = 300

    res = admin_api.post(
        "/v1/extensions", {"entry": ENTRY, "files": {ENTRY: big_process(90_000)}}, format="json"
    )

    assert res.status_code == 400
    assert res.json() == {
        "error": "invalid_extension",
        "rejection": {
            "code": "EXTENSION_TOO_LARGE",
            "field": f"files.{ENTRY}",
            "message": f"{ENTRY} was not compiled within the deploy's compile time limit of 300 ms "
            "(EXTENSIONS_DEPLOY_COMPILE_MS); split the extension or make the file smaller",
        },
        "limit": {"compileMs": 300},
    }
    assert counts() == (0, 0)
    assert compiles_in_flight() == 0

    # The child stopped mid-compile was discarded: the next deploy gets a working compiler.
    settings.EXTENSIONS_DEPLOY_COMPILE_MS = 60_000
    small = {"entry": ENTRY, "files": {ENTRY: big_process(500)}}
    assert admin_api.post("/v1/extensions", small, format="json").status_code == 201
    assert counts() == (1, 1)
