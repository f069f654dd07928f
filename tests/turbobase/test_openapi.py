"""OpenAPI: the schema documents every body, the generator is clean, and real answers fit it.

The schema's serializers describe bodies the views render by hand, so they could drift apart.
``assert_documented`` checks a real answer against the operation's documented answer for its
status, strictly: every documented key present (serializer fields are required unless marked),
no undocumented key (every object is closed unless it says it is open, as the error bodies do).
"""

from __future__ import annotations

import copy
import functools
import json
import os
from typing import Any

import jsonschema
import pytest
from django.core.management import call_command
from django.test import Client
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import EndpointEnumerator, SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from rest_framework.test import APIClient

from extensions.store import store_forget
from guardrails.settings import setting_set
from kernel.models import token_issue
from processes.invoke import run_invoke
from records.boundary import record_create, record_delete
from records.trail import Actor
from tests.conftest import make_user
from tests.processes.conftest import (
    FAILS_AT_SECOND,
    TWO_NOTES,
    InlineWorker,
    drain_runs,
    process_deploy,
)

pytestmark = pytest.mark.django_db

# Operations that take no body at all (steering verbs, sign-out, remove).
BODILESS = {
    ("delete", "/v1/auth/session"),
    ("delete", "/v1/extensions/{module_id}"),
    ("post", "/v1/processes/{process_id}/cancel"),
    ("post", "/v1/processes/runs/{run_id}/cancel"),
    ("post", "/v1/processes/runs/{run_id}/rollback"),
    ("post", "/v1/processes/runs/{run_id}/resume"),
    ("post", "/v1/processes/runs/{run_id}/retry"),
    ("post", "/v1/processes/runs/bulk/{bulk_id}/approve"),
}
# Bodies whose keys are the caller's own, so the schema can only say "an object" (and says why).
FREE_FORM = {
    ("post", "/v1/processes/{process_id}", "request"),  # the process's inputSchema decides
    ("post", "/v1/processes/{process_id}/plan", "request"),  # as the invoke's
    ("post", "/v1/processes/runs/{run_id}/redirect", "request"),  # so does a redirect's
    ("get", "/v1/rest/{resource}", "200"),  # a row's columns are the resource's
}


@functools.cache
def schema() -> dict[str, Any]:
    generated = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(generated))


def resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema()["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def shapes(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The object shapes a body may take: an array's items, each branch of a oneOf."""
    node = resolve(node)
    if node.get("type") == "array":
        return shapes(node["items"])
    if "oneOf" in node:
        return [shape for branch in node["oneOf"] for shape in shapes(branch)]
    return [node]


def operations() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, op) for path, ops in schema()["paths"].items() for method, op in ops.items()
    ]


# --- the schema itself ----------------------------------------------------------------------


def test_the_generator_emits_no_warning_and_the_schema_validates():
    GENERATOR_STATS.reset()  # earlier schema builds in this process must not count
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", os.devnull)
    assert not GENERATOR_STATS


def test_every_endpoint_is_in_the_schema():
    """A view the generator cannot describe is dropped from the schema; none may be."""
    routed = {
        (method.lower(), path)
        for path, _, method, _ in EndpointEnumerator().get_api_endpoints()
        if path.startswith("/v1/")
    }
    documented = {(method, path) for method, path, _ in operations()}
    assert documented == routed
    assert len(routed) >= 29  # the schema is not empty by accident


def test_every_request_and_success_body_has_a_documented_shape():
    bare = []
    for method, path, op in operations():
        bodies = []
        if "requestBody" in op:
            assert (method, path) not in BODILESS, (
                f"{method} {path} documents a body it does not take"
            )
            bodies.append(("request", op["requestBody"]["content"]["application/json"]["schema"]))
        elif method in ("post", "patch", "put"):
            assert (method, path) in BODILESS, f"{method} {path} documents no request body"
        for status, answer in op["responses"].items():
            if status.startswith("2") and "content" in answer:
                bodies.append((status, answer["content"]["application/json"]["schema"]))
        successes = {status for status in op["responses"] if status.startswith("2")}
        assert any(kind != "request" for kind, _ in bodies) or successes == {"204"}, (
            f"{method} {path} documents no answer body"
        )
        for kind, body in bodies:
            for shape in shapes(body):
                if (method, path, kind) in FREE_FORM:
                    assert shape["type"] == "object" and "additionalProperties" in shape
                elif not shape.get("properties"):
                    bare.append(f"{method.upper()} {path} {kind}")
    assert bare == []


def test_every_error_answer_is_the_one_error_body():
    components = schema()["components"]["schemas"]
    assert set(components["Error"]["properties"]) == {"error", "message", "rejection"}
    assert components["Error"]["required"] == ["error"]
    assert components["Error"]["additionalProperties"] == {}  # errors may add facts of their own
    assert set(components["Rejection"]["properties"]) == {"code", "field", "message"}
    for method, path, op in operations():
        errors = {status: answer for status, answer in op["responses"].items() if status[0] in "45"}
        if path not in ("/v1/health", "/v1/health/live"):  # they answer while the process does
            assert errors, f"{method} {path} documents no error"
        for answer in errors.values():
            assert answer["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/Error"
            }


def test_callers_are_told_how_to_authenticate():
    schemes = schema()["components"]["securitySchemes"]
    assert schemes["bearerAuth"]["scheme"] == "bearer"
    assert schemes["cookieAuth"] == {
        **schemes["cookieAuth"],
        "type": "apiKey",
        "in": "cookie",
        "name": "sessionid",
    }
    queue = schema()["paths"]["/v1/processes/queue"]["get"]
    assert queue["security"] == [{"bearerAuth": []}, {"cookieAuth": []}]
    assert "security" not in schema()["paths"]["/v1/health"]["get"] or schema()["paths"][
        "/v1/health"
    ]["get"]["security"] == [{}]


def test_each_operation_says_the_scope_a_token_needs_and_its_403():
    for method, path, op in operations():
        if path in ("/v1/health", "/v1/health/live", "/v1/health/ready", "/v1/auth/session"):
            continue  # open to anyone (kernel.scopes: scope_exempt)
        assert "A personal access token needs the `" in op["description"], f"{method} {path}"
        assert {"401", "403"} <= set(op["responses"]), f"{method} {path}"
    create = schema()["paths"]["/v1/data/{record_type}"]["post"]["description"]
    assert create.endswith("A personal access token needs the `data:write` scope.")


def test_a_token_without_the_scope_is_answered_as_documented(admin):
    _, raw = token_issue(user=admin, scopes=["data:read"])
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    path = "/v1/data/{record_type}"
    refused = reader.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert refused.status_code == 403
    assert assert_documented(refused, "post", path)["error"] == "insufficient_scope"


def test_the_bundle_documents_the_schedules_part_the_processes_room_registers():
    components = schema()["components"]["schemas"]
    assert components["BundleRequestIn"]["properties"]["schedules"]["items"] == {
        "$ref": "#/components/schemas/ScheduleEntryIn"
    }
    assert "schedules" in components["BundlePlanOut"]["required"]  # a plan always says
    assert "schedules" not in components["BundleAppliedOut"]["required"]  # an apply: when sent


def test_the_docs_page_is_served_from_local_static_files():
    res = Client().get("/api/docs")
    assert res.status_code == 200
    page = res.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in page
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css" in page
    assert "https://" not in page and "//cdn" not in page  # offline: nothing fetched from elsewhere
    assert "/api/schema" in page


def test_the_schema_is_served_without_a_warning():
    GENERATOR_STATS.reset()
    res = Client().get("/api/schema", {"format": "json"})
    assert res.status_code == 200
    assert not GENERATOR_STATS  # a docs page view used to print ~44 warnings to the server log
    assert res.json()["info"]["title"] == "Turbobase API"
    assert res.json()["paths"] == schema()["paths"]


# --- real answers against the schema ---------------------------------------------------------


def _closed(node: Any) -> Any:
    """OpenAPI 3.0 → JSON Schema: ``nullable`` as a null branch; objects with properties closed."""
    if isinstance(node, list):
        return [_closed(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _closed(value) for key, value in node.items()}
    if node.get("properties") is not None and "additionalProperties" not in node:
        node["additionalProperties"] = False
    if node.pop("nullable", False):
        node = {"anyOf": [node, {"type": "null"}]}
    return node


@functools.cache
def _components() -> dict[str, Any]:
    schemas = copy.deepcopy(schema()["components"]["schemas"])
    return {name: _closed(body) for name, body in schemas.items()}


def assert_documented(response: Any, method: str, path: str) -> Any:
    """The answer's status is documented for the operation, and its body fits that status's shape."""
    op = schema()["paths"][path][method]
    status = str(response.status_code)
    assert status in op["responses"], (
        f"{method} {path} answered {status}: {response.content[:300]!r}"
    )
    content = op["responses"][status].get("content")
    if content is None:
        assert not response.content
        return None
    body = json.loads(response.content)
    document = {
        **_closed(content["application/json"]["schema"]),
        "components": {"schemas": _components()},
    }
    jsonschema.Draft202012Validator(document).validate(body)
    return body


@pytest.fixture
def admin(db):
    store_forget()
    yield make_user("root", admin=True)
    store_forget()


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=user)
    return client


def test_sign_in_who_am_i_sign_out_and_health_fit_the_schema(admin):
    admin.set_password("pw")
    admin.save()
    client = APIClient()
    path = "/v1/auth/session"
    assert_documented(client.post(path, {"username": "root"}, format="json"), "post", path)  # 400
    assert_documented(
        client.post(path, {"username": "root", "password": "no"}, format="json"), "post", path
    )
    signed_in = assert_documented(
        client.post(path, {"username": "root", "password": "pw"}, format="json"), "post", path
    )
    assert signed_in["isAdmin"] is True
    assert assert_documented(client.get(path), "get", path)["via"] == "session"
    assert_documented(client.delete(path), "delete", path)  # 403: no CSRF token
    assert_documented(client.delete(path, HTTP_X_CSRFTOKEN=signed_in["csrfToken"]), "delete", path)
    assert_documented(client.get(path), "get", path)  # 401
    _, raw = token_issue(user=admin, scopes=["extensions:deploy"])
    bearer = APIClient()
    bearer.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert assert_documented(bearer.get(path), "get", path)["scopes"] == ["extensions:deploy"]
    assert assert_documented(APIClient().get("/v1/health"), "get", "/v1/health")["status"] == "ok"
    live = assert_documented(APIClient().get("/v1/health/live"), "get", "/v1/health/live")
    assert live == {"status": "ok"}
    unready = assert_documented(APIClient().get("/v1/health/ready"), "get", "/v1/health/ready")
    assert (unready["error"], unready["status"]) == ("not_ready", "unready")  # no worker yet


def test_record_writes_and_their_refusals_fit_the_schema(admin):
    client = api(admin)
    path, settle = "/v1/data/{record_type}", "/v1/data/{record_type}/settle"
    body = {"parent": {"company_name": "Acme"}, "idempotencyKey": "k-1"}
    created = assert_documented(client.post("/v1/data/customer", body, format="json"), "post", path)
    assert created["outcome"] == "created"
    again = client.post("/v1/data/customer", body, format="json")
    assert (again.status_code, assert_documented(again, "post", path)["outcome"]) == (
        200,
        "duplicate",
    )
    refused = client.post("/v1/data/migration_item", {"parent": {"note": "x"}}, format="json")
    assert assert_documented(refused, "post", path)["rejection"]["field"] == "parent.legacy_id"
    assert_documented(client.post("/v1/data/customer", [1], format="json"), "post", path)  # 400
    changed = client.patch(
        "/v1/data/customer",
        {"pgRowId": created["pgRowId"], "parent": {"company_name": "B"}},
        format="json",
    )
    assert assert_documented(changed, "patch", path)["outcome"] == "updated"
    missing = client.patch(
        "/v1/data/customer",
        {"externalId": "CUS-none", "parent": {"company_name": "X"}},
        format="json",
    )
    assert (missing.status_code, assert_documented(missing, "patch", path)["error"]) == (
        404,
        "record_not_found",
    )
    moved = client.patch(
        "/v1/data/customer",
        {"pgRowId": created["pgRowId"], "expectedSyncVersion": 0, "parent": {"company_name": "C"}},
        format="json",
    )
    assert (moved.status_code, assert_documented(moved, "patch", path)["error"]) == (
        409,
        "conflict",
    )
    assert_documented(
        client.post("/v1/data/customer/settle", {}, format="json"), "post", settle
    )  # 400
    linked = client.post("/v1/data/customer/settle", {"pgRowId": created["pgRowId"]}, format="json")
    assert (linked.status_code, assert_documented(linked, "post", settle)["error"]) == (
        409,
        "conflict",
    )
    lineage = "/v1/data/{record_type}/{pg_row_id}/lineage"
    traced = client.get(f"/v1/data/customer/{created['pgRowId']}/lineage")
    outcomes = [(e["action"], e["outcome"]) for e in assert_documented(traced, "get", lineage)]
    assert outcomes[:3] == [("create", "allowed"), ("create", "duplicate"), ("update", "allowed")]
    assert_documented(client.get("/v1/data/customer/nope/lineage"), "get", lineage)  # 404
    held = client.delete("/v1/data/customer", {"pgRowId": created["pgRowId"]}, format="json")
    assert (held.status_code, assert_documented(held, "delete", path)["outcome"]) == (202, "held")
    local = client.post("/v1/data/legacy_customer", {"parent": {"name": "L"}}, format="json")
    local_id = assert_documented(local, "post", path)["pgRowId"]
    gone = client.delete("/v1/data/legacy_customer", {"pgRowId": local_id}, format="json")
    assert (gone.status_code, assert_documented(gone, "delete", path)["outcome"]) == (
        200,
        "deleted",
    )


def test_reads_and_batches_fit_the_schema(admin):
    record_create(actor=Actor(user=admin), record_type="customer", parent={"company_name": "Acme"})
    client = api(admin)
    rows = assert_documented(client.get("/v1/rest/customer?select=*"), "get", "/v1/rest/{resource}")
    assert len(rows) == 1
    assert_documented(
        client.get("/v1/rest/customer?or=(a.eq.1)"), "get", "/v1/rest/{resource}"
    )  # 400
    batch = client.post(
        "/v1/batch", {"reads": ["customer?select=*", "nosuch?select=*"]}, format="json"
    )
    results = assert_documented(batch, "post", "/v1/batch")["results"]
    assert [sorted(result) for result in results] == [["rows", "truncated"], ["error"]]
    assert_documented(
        client.post("/v1/batch", {"reads": []}, format="json"), "post", "/v1/batch"
    )  # 400


def test_held_deletes_fit_the_schema(admin):
    alice = make_user("alice")
    record = record_create(
        actor=Actor(user=alice), record_type="customer", parent={"company_name": "A"}
    ).record
    record_delete(
        actor=Actor(user=alice, process_run_id="r1", process_step="po"),
        record_type="customer",
        pg_row_id=record.pk,
    )
    base, approve = "/v1/guardrails/held-deletes", "/v1/guardrails/held-deletes/{held_id}/approve"
    held = assert_documented(api(admin).get(base), "get", base)["heldDeletes"][0]
    assert_documented(api(alice).get(base), "get", base)  # 403
    assert_documented(api(admin).get(base, {"status": "maybe"}), "get", base)  # 400
    decided = api(admin).post(f"{base}/{held['id']}/approve", {"note": "ok"}, format="json")
    assert assert_documented(decided, "post", approve)["status"] == "approved"
    assert_documented(
        api(admin).post(f"{base}/{held['id']}/approve", format="json"), "post", approve
    )  # 409
    assert_documented(
        api(admin).post(f"{base}/999999/approve", format="json"), "post", approve
    )  # 404


def test_extensions_deploy_lint_bundle_and_remove_fit_the_schema(admin):
    client = api(admin)
    entry = "processes/two-notes.ts"
    module = {"entry": entry, "files": {entry: TWO_NOTES}}
    assert_documented(
        client.post("/v1/extensions", {"entry": entry}, format="json"), "post", "/v1/extensions"
    )
    deployed = assert_documented(
        client.post("/v1/extensions", module, format="json"), "post", "/v1/extensions"
    )
    assert deployed["outcome"] == "written"
    assert (
        assert_documented(client.get("/v1/extensions"), "get", "/v1/extensions")["extensions"][0][
            "id"
        ]
        == "acme:two-notes"
    )
    assert_documented(api(make_user("alice")).get("/v1/extensions"), "get", "/v1/extensions")  # 403
    assert_documented(
        client.post("/v1/extensions/lint", module, format="json"), "post", "/v1/extensions/lint"
    )
    bundle = {
        "modules": [module],
        "schedules": [
            {
                "name": "nightly",
                "scheduleKind": "cron",
                "scheduleExpr": "0 2 * * *",
                "body": {"kind": "process", "process": "acme:two-notes", "input": {"memo": "n"}},
            }
        ],
    }
    plan = client.post("/v1/extensions/bundle/plan", bundle, format="json")
    assert (
        assert_documented(plan, "post", "/v1/extensions/bundle/plan")["schedules"][0]["change"]
        == "new"
    )
    applied = client.post("/v1/extensions/bundle/apply", bundle, format="json")
    assert (
        assert_documented(applied, "post", "/v1/extensions/bundle/apply")["modules"][0]["outcome"]
        == "unchanged"
    )
    in_use = client.delete("/v1/extensions/acme:two-notes")
    assert assert_documented(in_use, "delete", "/v1/extensions/{module_id}")[
        "error"
    ]  # 409: scheduled
    emptied = client.post("/v1/extensions/bundle/apply", {"schedules": []}, format="json")
    assert (
        assert_documented(emptied, "post", "/v1/extensions/bundle/apply")["schedules"][0]["change"]
        == "removed"
    )
    removed = assert_documented(
        client.delete("/v1/extensions/acme:two-notes"), "delete", "/v1/extensions/{module_id}"
    )
    assert removed["status"] == "removed"
    assert_documented(
        client.delete("/v1/extensions/acme:two-notes"), "delete", "/v1/extensions/{module_id}"
    )


def test_settings_fit_the_schema(admin):
    client = api(admin)
    listed = assert_documented(client.get("/v1/settings"), "get", "/v1/settings")["settings"]
    assert {row["type"] for row in listed} >= {"integer", "boolean"}
    change = {"processes.slice_max_rows": 50, "processes.enabled": None}
    assert_documented(client.patch("/v1/settings", change, format="json"), "patch", "/v1/settings")
    assert_documented(
        client.patch("/v1/settings", {"nope": 1}, format="json"), "patch", "/v1/settings"
    )
    assert_documented(api(make_user("alice")).get("/v1/settings"), "get", "/v1/settings")  # 403
    body = schema()["paths"]["/v1/settings"]["patch"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["properties"]["processes.slice_max_rows"]["minimum"] == 1


def test_processes_invoke_watch_and_steer_fit_the_schema(admin):
    process_deploy(TWO_NOTES, by=admin, name="two-notes.ts")
    process_deploy(FAILS_AT_SECOND, by=admin, name="fails.ts")
    client = api(admin)
    queued = client.post("/v1/processes/acme:two-notes", {"memo": "a"}, format="json")
    run_id = assert_documented(queued, "post", "/v1/processes/{process_id}")["runId"]
    assert_documented(
        client.post("/v1/processes/acme:two-notes", {}, format="json"),
        "post",
        "/v1/processes/{process_id}",
    )  # 400: input refused
    assert_documented(
        client.post("/v1/processes/acme:none", {}, format="json"),
        "post",
        "/v1/processes/{process_id}",
    )  # 404
    run_invoke(process_id="acme:fails-at-second", body={}, user=admin)
    drain_runs()
    queue = assert_documented(client.get("/v1/processes/queue"), "get", "/v1/processes/queue")
    assert {run["state"] for run in queue["runs"]} == {"committed", "failed"}
    assert_documented(
        client.get("/v1/processes/queue?mode=fast"), "get", "/v1/processes/queue"
    )  # 400
    listed = assert_documented(client.get("/v1/processes"), "get", "/v1/processes")["processes"]
    assert [p["id"] for p in listed] == ["acme:fails-at-second", "acme:two-notes"]
    detail = client.get(f"/v1/processes/runs/{run_id}")
    assert len(assert_documented(detail, "get", "/v1/processes/runs/{run_id}")["steps"]) == 2
    bulk, bulk_one = "/v1/processes/runs/bulk", "/v1/processes/runs/bulk/{bulk_id}"
    order = {"action": "retry", "filter": {"processId": "acme:fails-at-second"}}
    preview = assert_documented(
        client.post(bulk, {**order, "preview": True}, format="json"), "post", bulk
    )
    assert preview["count"] == 1
    assert_documented(client.post(bulk, {**order, "preview": "x"}, format="json"), "post", bulk)
    submitted = client.post(
        bulk, {**order, "preview": False, "bulkId": preview["bulkId"]}, format="json"
    )
    assert assert_documented(submitted, "post", bulk)["state"] == "running"
    shown = client.get(f"{bulk}/{preview['bulkId']}")
    assert assert_documented(shown, "get", bulk_one)["count"] == 1
    assert_documented(client.get(f"{bulk}/nope"), "get", bulk_one)  # 404
    own = client.post(f"{bulk}/{preview['bulkId']}/approve")
    assert_documented(own, "post", bulk_one + "/approve")  # 403: four eyes
    assert_documented(
        client.post(f"{bulk}/{preview['bulkId']}/reject", {"reason": "x"}, format="json"),
        "post",
        bulk_one + "/reject",
    )  # 403
    planned = client.post("/v1/processes/acme:two-notes/plan", {"memo": "p"}, format="json")
    plan_path = "/v1/processes/{process_id}/plan"
    assert len(assert_documented(planned, "post", plan_path)["steps"]) == 2
    assert_documented(
        client.post("/v1/processes/acme:two-notes/plan", {}, format="json"), "post", plan_path
    )  # 400
    found = client.get("/v1/processes/runs?processId=acme:fails-at-second&state=failed")
    assert len(assert_documented(found, "get", "/v1/processes/runs")["runs"]) == 1
    assert_documented(
        client.get("/v1/processes/runs?input.memo=x"), "get", "/v1/processes/runs"
    )  # 400: not a searchable field
    assert_documented(
        client.get("/v1/processes/runs/nope"), "get", "/v1/processes/runs/{run_id}"
    )  # 404
    resume = client.post(f"/v1/processes/runs/{run_id}/resume")
    assert_documented(
        resume, "post", "/v1/processes/runs/{run_id}/resume"
    )  # 409: nothing outstanding
    rollback = client.post(f"/v1/processes/runs/{run_id}/rollback")
    assert (
        assert_documented(rollback, "post", "/v1/processes/runs/{run_id}/rollback")["queued"]
        is True
    )
    cancel = client.post(f"/v1/processes/runs/{run_id}/cancel")
    assert_documented(cancel, "post", "/v1/processes/runs/{run_id}/cancel")  # 409: already ended
    waiting = run_invoke(process_id="acme:two-notes", body={"memo": "b"}, user=admin)
    cancelled = client.post(f"/v1/processes/runs/{waiting.run_id}/cancel")
    assert (
        assert_documented(cancelled, "post", "/v1/processes/runs/{run_id}/cancel")["state"]
        == "cancelled"
    )
    retried = client.post(f"/v1/processes/runs/{waiting.run_id}/retry")
    assert assert_documented(retried, "post", "/v1/processes/runs/{run_id}/retry")["retryOf"] == (
        str(waiting.run_id)
    )
    assert_documented(
        client.post(f"/v1/processes/runs/{retried.json()['runId']}/retry"),
        "post",
        "/v1/processes/runs/{run_id}/retry",
    )  # 409: still queued
    redirect = f"/v1/processes/runs/{retried.json()['runId']}/redirect"
    redirected = client.post(redirect, {"memo": "r"}, format="json")
    assert (
        assert_documented(redirected, "post", "/v1/processes/runs/{run_id}/redirect")["redirectOf"]
        == retried.json()["runId"]
    )
    assert_documented(
        client.post(redirect, {"memo": 1}, format="json"),
        "post",
        "/v1/processes/runs/{run_id}/redirect",
    )  # 400: input refused
    linked = client.get(f"/v1/processes/runs/{retried.json()['runId']}")
    assert assert_documented(linked, "get", "/v1/processes/runs/{run_id}")["run"]["linkedTo"]
    client.post(f"/v1/processes/runs/{redirected.json()['runId']}/cancel")
    run_invoke(process_id="acme:two-notes", body={"memo": "c"}, user=admin)
    stopped = client.post("/v1/processes/acme:two-notes/cancel")
    assert assert_documented(stopped, "post", "/v1/processes/{process_id}/cancel") == {
        "cancelled": 1
    }


@pytest.mark.django_db(transaction=True)
def test_a_synchronous_invoke_fits_the_schema_settled_or_not(admin, settings):
    process_deploy(TWO_NOTES, by=admin, name="two-notes.ts")
    client, path = api(admin), "/v1/processes/{process_id}"
    # No worker yet, and the request leaves the run to the workers: the budget runs out.
    settings.PROCESS_SYNC_IN_REQUEST = False
    setting_set("processes.sync_budget_ms", 100)
    late = client.post("/v1/processes/acme:two-notes?mode=sync", {"memo": "a"}, format="json")
    assert assert_documented(late, "post", path)["error"] == "sync_budget_exceeded"
    setting_set("processes.sync_budget_ms", 30_000)
    worker = InlineWorker().start()
    try:
        settled = client.post(
            "/v1/processes/acme:two-notes?mode=sync", {"memo": "b"}, format="json"
        )
    finally:
        worker.stop()
    assert settled.status_code == 200
    assert assert_documented(settled, "post", path)["state"] == "committed"


def test_events_fit_the_schema(admin):
    client = api(admin)
    sent = client.post("/v1/events", {"name": "order.paid", "key": "k"}, format="json")
    assert assert_documented(sent, "post", "/v1/events")["replayed"] is False
    again = client.post("/v1/events", {"name": "order.paid", "key": "k"}, format="json")
    assert assert_documented(again, "post", "/v1/events")["replayed"] is True
    reused = client.post(
        "/v1/events", {"name": "order.paid", "data": {"n": 1}, "key": "k"}, format="json"
    )
    assert reused.status_code == 409
    assert_documented(reused, "post", "/v1/events")
    assert_documented(client.post("/v1/events", {"data": {}}, format="json"), "post", "/v1/events")
