"""``/v1/extensions/bundle/{plan,apply}``: a whole project as one plan, all or nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from extensions.bundle import bundle_apply
from extensions.errors import ExtensionInUse
from extensions.models import ExtensionModule, ExtensionStatus, ExtensionVersion
from extensions.signals import extension_removing
from extensions.store import store_forget
from processes.schedules.models import ProcessSchedule

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent / "fixtures"
TRACKED = "acme:migrate-customers-tracked"
PLAN, APPLY = "/v1/extensions/bundle/plan", "/v1/extensions/bundle/apply"

# The trap: a helper above the default export carries the first id: literal.
MISNAMED = """\
import { defineProcess } from '@turbobase/extensions';

const first = { id: 'first-step', recordType: 'salesOrder', build: () => ({ parent: { memo: 'x' } }) };

export default defineProcess({
  id: 'acme:misnamed',
  input: { type: 'object' },
  steps: [first],
});
"""


@pytest.fixture(autouse=True)
def _isolated() -> Iterator[None]:
    store_forget()
    yield
    store_forget()


def module(path: str, source: str | None = None, siblings: tuple[str, ...] = ()) -> dict:
    files = {path: source if source is not None else (FIXTURES / path).read_text()}
    files.update({s: (FIXTURES / s).read_text() for s in siblings})
    return {"entry": path, "files": files}


def project() -> dict:
    return {
        "modules": [
            module("processes/migrate-customers-tracked.ts"),
            module("hooks/require-memo.ts", siblings=("hooks/shared-rule.ts",)),
        ],
        "schedules": [
            {
                "name": "nightly",
                "scheduleKind": "cron",
                "scheduleExpr": "0 2 * * *",
                "scheduleTz": "UTC",
                "body": {"kind": "process", "process": TRACKED},
            }
        ],
    }


def stored() -> tuple[int, int, int]:
    return (
        ExtensionModule.objects.count(),
        ExtensionVersion.objects.count(),
        ProcessSchedule.objects.count(),
    )


def test_plan_says_what_would_change_and_writes_nothing(admin_api):
    answer = admin_api.post(PLAN, project(), format="json")
    assert answer.status_code == 200, answer.json()
    plan = answer.json()
    assert [
        (m["id"], m["kind"], m["entry"], m["change"], m["deployedVersion"]) for m in plan["modules"]
    ] == [
        (TRACKED, "process", "processes/migrate-customers-tracked.ts", "new", None),
        ("acme:require-memo", "hook", "hooks/require-memo.ts", "new", None),
    ]
    assert all(len(m["sha256"]) == 64 for m in plan["modules"])
    assert plan["schedules"] == [
        {"name": "nightly", "change": "new", "process": TRACKED, "cron": "0 2 * * *", "tz": "UTC"}
    ]
    assert (plan["removes"], plan["undeclared"]) == ([], [])
    assert stored() == (0, 0, 0)


def test_apply_stores_everything_and_a_second_apply_changes_nothing(admin_api):
    answer = admin_api.post(APPLY, project(), format="json")
    assert answer.status_code == 200, answer.json()
    assert [
        (m["id"], m["version"], m["outcome"], m["status"]) for m in answer.json()["modules"]
    ] == [(TRACKED, 1, "written", "active"), ("acme:require-memo", 1, "written", "active")]
    assert stored() == (2, 2, 1)
    plan = admin_api.post(PLAN, project(), format="json").json()
    assert [m["change"] for m in plan["modules"]] == ["unchanged", "unchanged"]
    assert plan["schedules"][0]["change"] == "unchanged"
    again = admin_api.post(APPLY, project(), format="json").json()
    assert [m["outcome"] for m in again["modules"]] == ["unchanged", "unchanged"]
    assert stored() == (2, 2, 1)  # no new version for unchanged code


def test_plan_marks_changed_code_replaced_and_lists_what_the_project_does_not_declare(
    admin_api, admin_user
):
    bundle_apply(data=project(), by=admin_user)
    bundle_apply(
        data={
            "modules": [
                module(
                    "processes/two-notes.ts",
                    (FIXTURES / "processes/pair-sales-orders.ts").read_text(),
                )
            ]
        },
        by=admin_user,
    )
    stray = ExtensionModule.objects.exclude(pk__in=[TRACKED, "acme:require-memo"]).get()
    changed = project()
    changed["modules"][0]["files"]["processes/migrate-customers-tracked.ts"] += "\n// tweaked\n"
    plan = admin_api.post(PLAN, changed, format="json").json()
    assert [(m["id"], m["change"], m["deployedVersion"]) for m in plan["modules"]] == [
        (TRACKED, "replaced", 1),
        ("acme:require-memo", "unchanged", 1),
    ]
    assert plan["undeclared"] == [{"id": stray.id, "kind": "process", "version": 1}]


def test_an_id_mismatch_in_one_module_refuses_the_whole_bundle(admin_api):
    body = project()
    body["modules"].append(module("processes/misnamed.ts", MISNAMED))
    for url in (PLAN, APPLY):
        answer = admin_api.post(url, body, format="json")
        assert answer.status_code == 400
        assert answer.json() == {
            "error": "extension_id_mismatch",
            "rejection": {
                "code": "extension_id_mismatch",
                "field": "modules[2].id",
                "message": (
                    "the store keys a module on the first id: literal in processes/misnamed.ts: it read the "
                    "literal 'first-step' but the module defines 'acme:misnamed'; make the first id: literal "
                    "the module's own id"
                ),
            },
            "literal": "first-step",
            "id": "acme:misnamed",
            "entry": "processes/misnamed.ts",
        }
    assert stored() == (0, 0, 0)


def test_a_module_that_does_not_compile_refuses_the_whole_bundle(admin_api):
    body = project()
    body["modules"].insert(
        0, module("processes/broken.ts", "export default defineProcess({ id: 'x', steps: [ };")
    )
    answer = admin_api.post(APPLY, body, format="json")
    assert answer.status_code == 400
    assert answer.json()["rejection"]["code"] == "extension_syntax_error"
    assert answer.json()["rejection"]["field"].startswith("modules[0].processes/broken.ts:")
    assert stored() == (0, 0, 0)


def test_a_module_declared_twice_is_refused(admin_api):
    body = project()
    body["modules"].append(
        module(
            "processes/copy.ts", (FIXTURES / "processes/migrate-customers-tracked.ts").read_text()
        )
    )
    answer = admin_api.post(APPLY, body, format="json")
    assert answer.status_code == 400
    assert answer.json()["rejection"]["field"] == "modules[2].id"
    assert stored() == (0, 0, 0)


def test_a_module_whose_id_is_deployed_as_another_kind_is_refused(admin_api, admin_user):
    bundle_apply(
        data={"modules": [module("hooks/require-memo.ts", siblings=("hooks/shared-rule.ts",))]},
        by=admin_user,
    )
    source = (
        (FIXTURES / "processes/migrate-customers-tracked.ts")
        .read_text()
        .replace(TRACKED, "acme:require-memo")
    )
    answer = admin_api.post(APPLY, {"modules": [module("processes/x.ts", source)]}, format="json")
    assert answer.status_code == 400
    assert answer.json()["rejection"]["field"] == "modules[0].id"
    assert ExtensionModule.objects.get().kind == "hook"


def test_removes_take_modules_out_in_the_same_plan(admin_api, admin_user):
    bundle_apply(data=project(), by=admin_user)
    body = {"modules": [], "removes": [TRACKED, "acme:require-memo"], "schedules": []}
    plan = admin_api.post(PLAN, body, format="json").json()
    assert plan["removes"] == [
        {"id": TRACKED, "kind": "process", "alongside": ["schedules:nightly"]},
        {"id": "acme:require-memo", "kind": "hook", "alongside": []},
    ]
    assert plan["schedules"][0]["change"] == "removed"
    applied = admin_api.post(APPLY, body, format="json")
    assert applied.status_code == 200
    assert set(ExtensionModule.objects.values_list("status", flat=True)) == {
        ExtensionStatus.REMOVED
    }
    assert ProcessSchedule.objects.count() == 0


def test_removing_what_is_not_deployed_is_refused(admin_api, admin_user):
    bundle_apply(data=project(), by=admin_user)
    answer = admin_api.post(APPLY, {"removes": ["acme:nothing"]}, format="json")
    assert answer.status_code == 404
    assert answer.json() == {
        "error": "extension_not_found",
        "id": "acme:nothing",
        "field": "removes[0]",
    }
    both = admin_api.post(APPLY, {**project(), "removes": ["acme:require-memo"]}, format="json")
    assert both.status_code == 400
    assert both.json()["rejection"]["field"] == "removes[0]"
    assert stored() == (2, 2, 1)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([], "body"),
        ({"modules": "all"}, "modules"),
        ({"modules": [{"entry": "a.ts"}]}, "modules[0].files"),
        ({"modules": [{"files": {"a.ts": ""}}]}, "modules[0].entry"),
        ({"removes": [7]}, "removes"),
        ({"hooks": []}, "hooks"),
        ({"schedules": {"name": "x"}}, "schedules"),
    ],
)
def test_a_malformed_body_is_refused_naming_the_field(admin_api, body, field):
    answer = admin_api.post(APPLY, body, format="json")
    assert answer.status_code == 400
    assert answer.json()["rejection"]["field"] == field


def test_only_a_deployer_plans_or_applies(alice_api):
    for url in (PLAN, APPLY):
        answer = alice_api.post(url, project(), format="json")
        assert (answer.status_code, answer.json()["error"]) == (403, "admin_required")
    assert stored() == (0, 0, 0)


def test_a_refusal_after_modules_were_stored_rolls_the_whole_apply_back(admin_api, admin_user):
    """A receiver refusing a remove is the last word, inside the transaction: nothing stays."""
    bundle_apply(data=project(), by=admin_user)

    def keep_hooks(sender, *, module_id, kind, **kwargs):
        if kind == "hook":
            raise ExtensionInUse(f"{module_id} is still wanted", field="id")

    extension_removing.connect(keep_hooks, dispatch_uid="test.keep_hooks")
    try:
        body = project()
        body["modules"] = body["modules"][:1]
        body["modules"][0]["files"]["processes/migrate-customers-tracked.ts"] += "\n// v2\n"
        body["removes"] = ["acme:require-memo"]
        assert (
            admin_api.post(PLAN, body, format="json").json()["modules"][0]["change"] == "replaced"
        )
        answer = admin_api.post(APPLY, body, format="json")
    finally:
        extension_removing.disconnect(dispatch_uid="test.keep_hooks")
    assert answer.status_code == 409
    assert answer.json()["error"] == "extension_in_use"
    assert stored() == (2, 2, 1)  # the replaced process's version 2 was rolled back with it
    assert set(ExtensionModule.objects.values_list("status", flat=True)) == {ExtensionStatus.ACTIVE}


def test_a_bundle_that_drops_a_scheduled_process_is_refused_at_plan(admin_api, admin_user):
    bundle_apply(data=project(), by=admin_user)
    answer = admin_api.post(PLAN, {"removes": [TRACKED]}, format="json")
    assert answer.status_code == 409
    assert (answer.json()["rejection"]["field"], answer.json()["schedules"]) == (
        "removes",
        ["nightly"],
    )
