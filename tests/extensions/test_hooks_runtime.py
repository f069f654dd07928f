"""Deployed hooks in the write boundary: their own rejections, their failures, no leaked state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from extensions.deploy import extension_deploy, extension_remove
from extensions.pool import pool_close
from extensions.store import store_forget
from records.boundary import record_create
from records.models import Record, RecordWriteState, WriteTrail
from records.trail import Actor

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent / "fixtures"

MEMO_REFUSAL = {
    "error": "write_refused",
    "rejection": {
        "code": "MEMO_REQUIRED",
        "field": "parent.memo",
        "message": "a memo is required on every customer",
    },
}


@pytest.fixture(autouse=True)
def _isolated(settings) -> Iterator[None]:
    settings.EXTENSIONS_HOOK_CPU_MS = 200
    yield
    store_forget()
    pool_close()


def deploy_memo_hook(by) -> None:
    files = {
        path: (FIXTURES / path).read_text(encoding="utf-8")
        for path in ("hooks/require-memo.ts", "hooks/shared-rule.ts")
    }
    extension_deploy(entry="hooks/require-memo.ts", files=files, by=by)


def deploy_hook(
    by,
    *,
    run: str,
    on: str = "before_save",
    record_type: str = "customer",
    hook_id: str = "acme:hook",
    prelude: str = "",
) -> None:
    source = f"""import {{ defineHook }} from '@turbobase/extensions';
{prelude}
export default defineHook({{
  id: '{hook_id}',
  recordType: '{record_type}',
  on: '{on}',
  run(ctx: any) {{
{run}
  }},
}});
"""
    extension_deploy(entry="hooks/hook.ts", files={"hooks/hook.ts": source}, by=by)


def test_before_save_hook_rejects_a_create_with_its_own_code_and_field(admin_user, alice_api):
    deploy_memo_hook(admin_user)
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.status_code == 422, res.content
    assert res.json() == MEMO_REFUSAL
    assert Record.reads.count() == 0
    assert RecordWriteState.reads.count() == 0
    trail = WriteTrail.reads.get()
    assert (trail.action, trail.outcome, trail.code, trail.field) == (
        "create",
        "refused",
        "MEMO_REQUIRED",
        "parent.memo",
    )


def test_before_save_hook_lets_a_valid_write_through(admin_user, alice_api):
    deploy_memo_hook(admin_user)
    res = alice_api.post(
        "/v1/data/customer", {"parent": {"company_name": "A", "memo": "m"}}, format="json"
    )
    assert res.status_code == 201, res.content
    assert Record.reads.count() == 1


def test_hook_for_another_record_type_does_not_run(admin_user, alice_api):
    deploy_memo_hook(admin_user)
    res = alice_api.post("/v1/data/salesOrder", {"parent": {"entity_id": "C1"}}, format="json")
    assert res.status_code == 201, res.content


def test_before_save_hook_rejects_an_update_and_writes_nothing(admin_user, alice, alice_api):
    record = record_create(
        actor=Actor(user=alice), record_type="customer", parent={"company_name": "A", "memo": "m"}
    ).record
    deploy_memo_hook(admin_user)
    res = alice_api.patch(
        "/v1/data/customer", {"pgRowId": str(record.pk), "parent": {"memo": " "}}, format="json"
    )
    assert res.status_code == 422
    assert res.json() == MEMO_REFUSAL
    record.refresh_from_db()
    assert (record.fields, record.sync_version) == ({"company_name": "A", "memo": "m"}, 1)


def test_hook_sees_the_record_and_the_changes(admin_user, alice, alice_api):
    record = record_create(
        actor=Actor(user=alice), record_type="customer", parent={"company_name": "A", "memo": "m"}
    ).record
    deploy_hook(
        admin_user,
        run="""
    const seen = [ctx.slot, ctx.recordType, ctx.operation, ctx.record.pgRowId, ctx.record.parent.company_name,
                  Object.keys(ctx.changes).join(',')].join('|');
    return { reject: { code: 'SEEN', field: 'parent', message: seen } };""",
    )
    res = alice_api.patch(
        "/v1/data/customer", {"pgRowId": str(record.pk), "parent": {"memo": "n"}}, format="json"
    )
    assert res.status_code == 422
    assert res.json()["rejection"]["message"] == f"before_save|customer|update|{record.pk}|A|memo"


def test_before_delete_hook_refuses_a_delete(admin_user, alice):
    record = record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"company_name": "A"}
    ).record
    deploy_hook(
        admin_user,
        on="before_delete",
        record_type="legacy_customer",
        run="""
    return { reject: { code: 'KEEP_LEGACY', field: 'pgRowId', message: 'legacy rows stay' } };""",
    )
    from tests.conftest import client_for

    res = client_for(alice).delete(
        "/v1/data/legacy_customer", {"pgRowId": str(record.pk)}, format="json"
    )
    assert res.status_code == 422
    assert res.json() == {
        "error": "write_refused",
        "rejection": {"code": "KEEP_LEGACY", "field": "pgRowId", "message": "legacy rows stay"},
    }
    assert Record.reads.filter(pk=record.pk).exists()


def test_a_hook_that_throws_refuses_the_write_as_hook_failed(admin_user, alice_api):
    deploy_hook(
        admin_user,
        run="""
    if (ctx.record.parent.company_name === 'A') throw new Error('no A customers today');
    return undefined;""",
    )
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.status_code == 422
    rejection = res.json()["rejection"]
    assert (rejection["code"], rejection["field"]) == ("HOOK_FAILED", None)
    assert rejection["message"].startswith(
        "hook acme:hook failed (sandbox_script_error): Error: no A customers today (at hooks/hook.ts:"
    )
    assert Record.reads.count() == 0


def test_a_hook_that_loops_refuses_the_write_as_hook_timeout(admin_user, alice_api):
    deploy_hook(admin_user, run="    for (;;) {}")
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.status_code == 422
    rejection = res.json()["rejection"]
    assert (rejection["code"], rejection["field"]) == ("HOOK_TIMEOUT", None)
    assert rejection["message"].startswith(
        "hook acme:hook ran past its CPU budget: CPU budget of 200 ms"
    )
    assert Record.reads.count() == 0
    # The next write gets a healthy sandbox, and the same verdict.
    again = alice_api.post("/v1/data/customer", {"parent": {"company_name": "B"}}, format="json")
    assert again.json()["rejection"]["code"] == "HOOK_TIMEOUT"


def test_a_hook_reaching_for_the_host_refuses_the_write(admin_user, alice_api):
    deploy_hook(
        admin_user,
        run="""
    const name = ['f', 's'].join('');  // past the deploy's static import check
    try { (globalThis as any).require(name); } catch (e) { /* swallowed, still a violation */ }
    return undefined;""",
    )
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.status_code == 422
    assert res.json()["rejection"]["code"] == "HOOK_FAILED"
    assert "(sandbox_violation)" in res.json()["rejection"]["message"]


def test_a_rejection_without_a_code_is_hook_failed(admin_user, alice_api):
    deploy_hook(admin_user, run="    return { reject: { message: 'no code' } };")
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.json()["rejection"] == {
        "code": "HOOK_FAILED",
        "field": None,
        "message": "hook acme:hook returned a rejection without a code",
    }


def test_no_state_leaks_from_one_write_to_the_next(admin_user, alice_api):
    deploy_hook(
        admin_user,
        prelude="let calls = 0;",
        run="""
    calls += 1;
    (globalThis as any).seen = ((globalThis as any).seen ?? 0) + 1;
    if (calls > 1 || (globalThis as any).seen > 1) {
      return { reject: { code: 'LEAKED', field: 'parent', message: `calls=${calls}` } };
    }
    return undefined;""",
    )
    for name in ("A", "B", "C"):
        res = alice_api.post("/v1/data/customer", {"parent": {"company_name": name}}, format="json")
        assert res.status_code == 201, res.content


def test_an_async_hook_is_awaited(admin_user, alice_api):
    deploy_hook(
        admin_user,
        run="""
    return Promise.resolve().then(() => ({ reject: { code: 'LATER', field: 'parent.x', message: 'async' } }));""",
    )
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.json()["rejection"] == {"code": "LATER", "field": "parent.x", "message": "async"}


def test_a_new_version_is_served_at_once_here_and_a_removed_hook_stops(admin_user, alice_api):
    deploy_memo_hook(admin_user)
    assert (
        alice_api.post(
            "/v1/data/customer", {"parent": {"company_name": "A"}}, format="json"
        ).status_code
        == 422
    )
    deploy_hook(admin_user, hook_id="acme:require-memo", run="    return undefined;")
    assert (
        alice_api.post(
            "/v1/data/customer", {"parent": {"company_name": "A"}}, format="json"
        ).status_code
        == 201
    )
    deploy_memo_hook(admin_user)
    assert (
        alice_api.post(
            "/v1/data/customer", {"parent": {"company_name": "A"}}, format="json"
        ).status_code
        == 422
    )
    extension_remove(module_id="acme:require-memo", by=admin_user)
    assert (
        alice_api.post(
            "/v1/data/customer", {"parent": {"company_name": "A"}}, format="json"
        ).status_code
        == 201
    )


def test_a_hook_that_freezes_the_global_object_does_not_refuse_the_next_write(
    admin_user, alice_api
):
    """One write's hook freezes (or seals, or stops extending) the sandbox's global object; every
    later write of the type is judged by a clean one, not refused with HOOK_FAILED."""
    deploy_hook(
        admin_user,
        run="""
    const name = ctx.record.parent.company_name;
    if (name === 'freeze') Object.freeze(globalThis);
    if (name === 'seal') Object.seal(globalThis);
    if (name === 'stop') Object.preventExtensions(globalThis);
    return undefined;""",
    )
    for name in ("freeze", "after freeze", "seal", "after seal", "stop", "after stop"):
        res = alice_api.post("/v1/data/customer", {"parent": {"company_name": name}}, format="json")
        assert res.status_code == 201, (name, res.content)
    assert Record.reads.filter(record_type="customer").count() == 6
    assert not WriteTrail.reads.filter(outcome="refused").exists()
