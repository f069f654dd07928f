"""A process's schemas (``input``, an AI step's ``ai.schema``) are one document each.

A ``$ref`` outside the document (a file, a URL, one made remote by ``$id``), one that points at
nothing, and a cycle of refs that never ends are refused at deploy, naming the field, with nothing
stored. A schema that was stored before these checks (written here through the store, past the
deploy's checks) is never fetched from anywhere and never crashes whoever applies it: an HTTP
invoke answers 409 at once, a triggered run is ``refused`` while the event or the record write
that fired it lands, an AI step fails by name.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from extensions.deploy import extension_prepare, extension_store
from extensions.models import ExtensionModule, ExtensionVersion
from processes.events.models import Event
from processes.models import Process, ProcessRun
from records.models import Record
from tests.processes.engine_support import invoke, ledger, pump
from tests.processes.test_triggers_event import ON_LEAD
from tests.processes.test_triggers_record import ON_APPROVED
from tests.silent_server import SilentServer, silent_server

pytestmark = pytest.mark.django_db

ENTRY = "processes/refs.ts"
SOURCE = """\
import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: 'acme:refs',
  input: INPUT,
  steps: [{ id: 'ask', ai: { prompt: (ctx) => 'which?', schema: ANSWER } }],
});
"""
UNUSABLE = "the deployed input schema cannot be used: "


def source(*, input: str = "{ type: 'object' }", answer: str = "{ type: 'string' }") -> str:
    return SOURCE.replace("INPUT", input).replace("ANSWER", answer)


@pytest.fixture
def server() -> Iterator[SilentServer]:
    with silent_server() as running:
        yield running


def store_unchecked(text: str, *, by: Any, change: Callable[[dict], None], entry=ENTRY) -> None:
    """Store ``text``'s definition as ``change`` rewrites it, past the deploy's checks (the
    store checks nothing): a schema deployed before the deploy refused such schemas."""
    prepared = extension_prepare(entry=entry, files={entry: text})
    definition = copy.deepcopy(prepared.definition)
    change(definition)
    extension_store(replace(prepared, definition=definition), by=by)


def set_input(schema: dict) -> Callable[[dict], None]:
    return lambda definition: definition.update(input=schema)


# (label, the source's input and answer schemas given the silent server's URL, the field named)
REFUSED = [
    (
        "file $ref",
        lambda url: source(input="{ properties: { x: { $ref: 'file:///etc/passwd' } } }"),
        "input.properties.x.$ref",
    ),
    ("http $ref", lambda url: source(input=f"{{ $ref: '{url}' }}"), "input.$ref"),
    (
        "relative $ref under a remote $id",
        lambda url: source(
            input=f"{{ $id: '{url}', properties: {{ x: {{ $ref: 'other.json' }} }} }}"
        ),
        "input.properties.x.$ref",
    ),
    (
        "nested $id",
        lambda url: source(input=f"{{ properties: {{ x: {{ $id: '{url}', $ref: '#' }} }} }}"),
        "input.properties.x.$id",
    ),
    (
        "ai.schema file $ref",
        lambda url: source(answer="{ $ref: 'file:///etc/passwd' }"),
        "steps[0].ai.schema.$ref",
    ),
    (
        "ai.schema http $ref",
        lambda url: source(answer=f"{{ $ref: '{url}' }}"),
        "steps[0].ai.schema.$ref",
    ),
    ("ai.schema cyclic", lambda url: source(answer="{ $ref: '#' }"), "steps[0].ai.schema.$ref"),
    ("cyclic #", lambda url: source(input="{ $ref: '#' }"), "input.$ref"),
    (
        "a -> b -> a",
        lambda url: source(
            input="{ $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } } }"
        ),
        "input.$defs.a.$ref",
    ),
    ("unresolvable", lambda url: source(input="{ $ref: '#/$defs/missing' }"), "input.$ref"),
]


@pytest.mark.parametrize(("label", "text_of", "field"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_schema_that_is_not_one_document_is_refused_at_deploy_naming_the_field(
    admin_api, server, label, text_of, field
):
    res = admin_api.post(
        "/v1/extensions", {"entry": ENTRY, "files": {ENTRY: text_of(server.url())}}, format="json"
    )
    assert res.status_code == 400, res.content
    body = res.json()
    assert (body["error"], body["rejection"]["code"], body["rejection"]["field"]) == (
        "invalid_extension",
        "PROCESS_CONTRACT_INVALID",
        field,
    )
    assert body["rejection"]["message"].startswith(f"{field}: "), body
    assert (ExtensionModule.objects.count(), ExtensionVersion.objects.count()) == (0, 0)
    assert not Process.objects.exists()
    assert server.accepted == 0


TREE = """{ $ref: '#/$defs/node', $defs: { node: { type: 'object', required: ['name'],
  properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } } } } }"""


def test_a_recursive_schema_that_descends_deploys_and_checks_the_input(admin_api, admin_user):
    res = admin_api.post(
        "/v1/extensions", {"entry": ENTRY, "files": {ENTRY: source(input=TREE)}}, format="json"
    )
    assert res.status_code == 201, res.content
    tree = {"name": "root", "children": [{"name": "leaf", "children": []}]}
    assert admin_api.post("/v1/processes/acme:refs", tree, format="json").status_code == 202
    refused = admin_api.post(
        "/v1/processes/acme:refs", {"name": "root", "children": [{"name": 7}]}, format="json"
    )
    assert refused.status_code == 400
    assert refused.json()["rejection"]["field"] == "children.0.name"
    assert ProcessRun.objects.count() == 1


@pytest.mark.parametrize("kind", ["http", "file", "cyclic"])
def test_invoking_a_stored_unusable_input_schema_answers_409_at_once_and_fetches_nothing(
    admin_api, admin_user, server, tmp_path: Path, kind
):
    secret = tmp_path / "secret.json"
    secret.write_text('{"const": "TOP-SECRET"}')
    schema, message = {
        "http": ({"$ref": server.url()}, f"{server.url()!r} is not a reference inside this schema"),
        "file": (
            {"$ref": secret.as_uri()},
            f"{secret.as_uri()!r} is not a reference inside this schema",
        ),
        "cyclic": ({"$ref": "#"}, "'#' leads back to itself without looking inside the value"),
    }[kind]
    store_unchecked(source(), by=admin_user, change=set_input(schema))
    started = time.monotonic()
    res = admin_api.post("/v1/processes/acme:refs", "guess", format="json")
    assert time.monotonic() - started < 2
    assert res.status_code == 409, res.content
    body = res.json()
    assert (body["error"], body["rejection"]["code"], body["rejection"]["field"]) == (
        "input_schema_unusable",
        "INPUT_SCHEMA_UNUSABLE",
        "input.$ref",
    )
    assert body["rejection"]["message"].startswith(UNUSABLE + message), body
    assert "TOP-SECRET" not in res.content.decode()
    assert server.accepted == 0
    assert not ProcessRun.objects.exists()


def bad_schemas(server: SilentServer) -> dict[str, dict]:
    return {"cyclic": {"$ref": "#"}, "remote": {"$ref": server.url()}}


@pytest.mark.parametrize("kind", ["cyclic", "remote"])
def test_an_event_for_a_stored_unusable_input_schema_is_kept_and_its_run_refused(
    admin_user, alice_api, server, kind
):
    entry = "processes/on-lead.ts"
    store_unchecked(
        ON_LEAD, by=admin_user, change=set_input(bad_schemas(server)[kind]), entry=entry
    )
    res = alice_api.post(
        "/v1/events", {"name": "lead.created", "data": {"company": "Acme"}}, format="json"
    )
    assert res.status_code == 202, res.content
    [run] = ProcessRun.objects.filter(process_id="acme:on-lead")
    assert res.json()["runs"] == [
        {"runId": str(run.pk), "processId": "acme:on-lead", "state": "refused"}
    ]
    assert Event.objects.get().data == {"company": "Acme"}
    assert (run.state, run.refusal_code, run.refusal_field) == (
        "refused",
        "INPUT_SCHEMA_UNUSABLE",
        "input.$ref",
    )
    assert run.reason.startswith(f"input.$ref: {UNUSABLE}"), run.reason
    assert server.accepted == 0


@pytest.mark.parametrize("kind", ["cyclic", "remote"])
def test_a_record_write_entering_a_stored_unusable_input_schemas_trigger_lands_and_its_run_is_refused(
    admin_user, alice_api, server, kind
):
    entry = "processes/on-approved.ts"
    store_unchecked(
        ON_APPROVED, by=admin_user, change=set_input(bad_schemas(server)[kind]), entry=entry
    )
    res = alice_api.post(
        "/v1/data/salesOrder", {"parent": {"memo": "m", "status": "approved"}}, format="json"
    )
    assert res.status_code == 201, res.content
    record = Record.reads.get(pg_row_id=res.json()["pgRowId"])
    assert record.fields == {"memo": "m", "status": "approved"}
    [run] = ProcessRun.objects.filter(process_id="acme:on-approved")
    assert (run.state, run.refusal_code, run.refusal_field) == (
        "refused",
        "INPUT_SCHEMA_UNUSABLE",
        "input.$ref",
    )
    assert run.reason.startswith(f"input.$ref: {UNUSABLE}"), run.reason
    assert server.accepted == 0


@pytest.mark.parametrize("kind", ["cyclic", "remote"])
def test_an_ai_step_with_a_stored_unusable_schema_fails_by_name_and_fetches_nothing(
    admin_user, alice, server, kind
):
    def set_answer(definition: dict) -> None:
        definition["steps"][0]["ai"]["schema"] = bad_schemas(server)[kind]

    store_unchecked(source(), by=admin_user, change=set_answer)
    run = invoke("acme:refs", {}, alice)
    pump()
    run.refresh_from_db()
    assert run.state == "failed", run.reason
    assert ledger(run) == [("ask", "failed", "AI_SCHEMA_UNUSABLE")]
    assert run.ledger.get(step_id="ask").refusal_message.startswith(
        "ai.schema.$ref: the deployed ai.schema cannot be used: "
    )
    assert server.accepted == 0
