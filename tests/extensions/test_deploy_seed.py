"""Every TypeScript example of seed 000 deploys through the API; each mutated form is refused,
naming its field or import specifier, with nothing stored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from extensions.models import ExtensionModule, ExtensionVersion
from extensions.store import store_forget
from processes.models import Process

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent / "fixtures"

# file → (the id it defines, the path of its first create step, its first record type's field)
SEED = {
    "raise-po-and-bill.ts": ("acme:raise-po-and-bill", "steps[0]", "steps[0].recordType"),
    "pair-sales-orders.ts": ("acme:pair-sales-orders", "steps[0]", "steps[0].recordType"),
    "drop-invoice.ts": ("acme:drop-invoice", None, "steps[0].recordType"),
    "legs.ts": ("acme:legs", "steps[0].steps[0]", "steps[0].steps[0].recordType"),
    "rush-and-fee.ts": ("acme:rush-and-fee", "steps[0]", "steps[0].recordType"),
    "out-back-stamp.ts": ("acme:out-back-stamp", "steps[0]", "steps[0].recordType"),
    "migrate-customers.ts": ("acme:migrate-customers", "steps[0]", "steps[0].recordType"),
    "migrate-customers-tracked.ts": (
        "acme:migrate-customers-tracked",
        "steps[0]",
        "steps[0].recordType",
    ),
}


@pytest.fixture(autouse=True)
def _forget_store() -> Iterator[None]:
    yield
    store_forget()


def source_of(name: str) -> str:
    return (FIXTURES / "processes" / name).read_text(encoding="utf-8")


def deploy(api, name: str, source: str, **siblings: str):
    files = {f"processes/{name}": source, **{f"processes/{k}": v for k, v in siblings.items()}}
    return api.post("/v1/extensions", {"entry": f"processes/{name}", "files": files}, format="json")


def assert_refused(res, *, status: int, error: str, code: str, field: str) -> None:
    assert res.status_code == status, res.content
    body = res.json()
    assert (body["error"], body["rejection"]["code"], body["rejection"]["field"]) == (
        error,
        code,
        field,
    ), body
    assert ExtensionModule.objects.count() == 0
    assert ExtensionVersion.objects.count() == 0
    assert Process.objects.count() == 0


@pytest.mark.parametrize("name", sorted(SEED))
def test_seed_example_deploys_cleanly(admin_api, admin_user, name):
    res = deploy(admin_api, name, source_of(name))
    module_id = SEED[name][0]
    assert res.status_code == 201, res.content
    assert res.json() == {
        "id": module_id,
        "kind": "process",
        "version": 1,
        "outcome": "written",
        "status": "active",
    }
    module = ExtensionModule.objects.get()
    version = ExtensionVersion.objects.get()
    assert (module.id, module.kind, module.status, module.version) == (
        module_id,
        "process",
        "active",
        1,
    )
    assert version.source == {f"processes/{name}": source_of(name)}
    assert version.deployed_by == admin_user
    assert Process.objects.filter(id=module_id).exists()


def _replace_once(source: str, old: str, new: str) -> str:
    assert old in source, old
    return source.replace(old, new, 1)


# Mutations every example can take: (name, how, status, error, code, field for the example).
UNIVERSAL = {
    "npm import": (
        lambda s: "import { z } from 'zod';\n" + s,
        400,
        "invalid_extension",
        "IMPORT_REFUSED",
        lambda meta: "zod",
    ),
    "escaping sibling path": (
        lambda s: "import { rule } from '../shared/rule.js';\n" + s,
        400,
        "invalid_extension",
        "IMPORT_REFUSED",
        lambda meta: "../shared/rule.js",
    ),
    "mismatched id literal": (
        lambda s: _replace_once(
            s, "export default", "const legacy = { id: 'acme:legacy-copy' };\n\nexport default"
        ),
        400,
        "extension_id_mismatch",
        "extension_id_mismatch",
        lambda meta: "id",
    ),
    "unknown record type": (
        lambda s: _replace_once(s, "recordType: '", "recordType: 'noSuchType"),
        400,
        "invalid_extension",
        "PROCESS_CONTRACT_INVALID",
        lambda meta: meta[2],
    ),
    "invalid JSON Schema": (
        lambda s: _replace_once(s, "type: 'object'", "type: 'objekt'"),
        400,
        "invalid_extension",
        "PROCESS_CONTRACT_INVALID",
        lambda meta: "input.type",
    ),
}


@pytest.mark.parametrize("mutation", sorted(UNIVERSAL))
@pytest.mark.parametrize("name", sorted(SEED))
def test_seed_example_mutated_is_refused_and_nothing_stored(admin_api, name, mutation):
    mutate, status, error, code, field = UNIVERSAL[mutation]
    res = deploy(admin_api, name, mutate(source_of(name)))
    assert_refused(res, status=status, error=error, code=code, field=field(SEED[name]))


def test_mismatched_id_literal_names_both(admin_api):
    source = _replace_once(
        source_of("raise-po-and-bill.ts"),
        "{\n  id: 'acme:raise-po-and-bill'",
        "{\n  // was id: 'acme:po-then-bill' before the rename\n  id: 'acme:raise-po-and-bill'",
    )
    res = deploy(admin_api, "raise-po-and-bill.ts", source)
    assert_refused(
        res, status=400, error="extension_id_mismatch", code="extension_id_mismatch", field="id"
    )
    body = res.json()
    assert (body["literal"], body["id"]) == ("acme:po-then-bill", "acme:raise-po-and-bill")
    assert "'acme:po-then-bill'" in body["rejection"]["message"]
    assert "'acme:raise-po-and-bill'" in body["rejection"]["message"]


# Mutations that belong to one shape of step.
SPECIFIC = [
    (
        "no build",
        "raise-po-and-bill.ts",
        lambda s: _replace_once(
            s, "build: (ctx) => ({ parent: { entity_id: ctx.input.vendorId } }),", ""
        ),
        "steps[0].build",
    ),
    (
        "no build in a group",
        "legs.ts",
        lambda s: _replace_once(
            s,
            "build: (ctx) => ({ parent: { memo: `leg ${ctx.index}`, entity_id: ctx.item.vendorId } }) },",
            "},",
        ),
        "steps[0].steps[0].build",
    ),
    (
        "delete with build",
        "drop-invoice.ts",
        lambda s: _replace_once(
            s,
            "onRefused: 'continue',",
            "onRefused: 'continue',\n      build: (ctx) => ({ parent: {} }),",
        ),
        "steps[0].build",
    ),
    (
        "undo on a delete",
        "drop-invoice.ts",
        lambda s: _replace_once(
            s, "onRefused: 'continue',", "onRefused: 'continue',\n      rollback: 'undo',"
        ),
        "steps[0].rollback",
    ),
    (
        "onRefused on a create",
        "raise-po-and-bill.ts",
        lambda s: _replace_once(
            s, "awaitSource: true, ", "awaitSource: true, onRefused: 'continue', "
        ),
        "steps[0].onRefused",
    ),
    (
        "duplicate step ids",
        "out-back-stamp.ts",
        lambda s: _replace_once(s, "{ id: 'back',", "{ id: 'out', "),
        "steps[1].id",
    ),
    (
        "duplicate step ids in a group",
        "legs.ts",
        lambda s: _replace_once(s, "{ id: 'note',", "{ id: 'doc', "),
        "steps[0].steps[1].id",
    ),
    (
        "forEach naming no input property",
        "legs.ts",
        lambda s: _replace_once(s, "{ input: 'legs' }", "{ input: 'leggs' }"),
        "steps[0].forEach.input",
    ),
    (
        "update address not a function",
        "migrate-customers-tracked.ts",
        lambda s: _replace_once(
            s,
            "update: { pgRowId: (ctx) => ctx.row!.pg_row_id as string },",
            "update: { pgRowId: 'row-1' },",
        ),
        "steps[1].update.pgRowId",
    ),
    (
        "eachRow.key not a string",
        "migrate-customers.ts",
        lambda s: _replace_once(s, "key: 'id',", "key: 7,"),
        "eachRow.key",
    ),
    (
        "eachRow.outstanding not a function",
        "migrate-customers.ts",
        lambda s: _replace_once(s, "outstanding: () => 'legacy", "outstanding: 'legacy"),
        "eachRow.outstanding",
    ),
    (
        "steps not a list",
        "rush-and-fee.ts",
        lambda s: _replace_once(s, "steps: [", "steps: { not: 'a list' }, unused: ["),
        "steps",
    ),
    (
        "an unknown top-level key",
        "raise-po-and-bill.ts",
        lambda s: _replace_once(
            s,
            "onFailure: 'rollback',",
            "onFailure: 'rollback',\n  triggers: { event: 'po.approved' },",
        ),
        "triggers",
    ),
    (
        "a misspelt step key",
        "raise-po-and-bill.ts",
        lambda s: _replace_once(s, "awaitSource: true, ", "awaitsource: true, "),
        "steps[0].awaitsource",
    ),
    (
        "an unknown key on a group",
        "legs.ts",
        lambda s: _replace_once(s, "{ input: 'legs' }", "{ input: 'legs' }, max: 3"),
        "steps[0].max",
    ),
]


@pytest.mark.parametrize(
    ("label", "name", "mutate", "field"), SPECIFIC, ids=[m[0] for m in SPECIFIC]
)
def test_seed_example_broken_contract_is_refused_naming_the_field(
    admin_api, label, name, mutate, field
):
    res = deploy(admin_api, name, mutate(source_of(name)))
    assert_refused(
        res, status=400, error="invalid_extension", code="PROCESS_CONTRACT_INVALID", field=field
    )
    assert res.json()["rejection"]["message"].startswith(field + ": ")


def test_sibling_import_folds_in_and_works(admin_api):
    res = deploy(
        admin_api,
        "po-with-memo.ts",
        source_of("po-with-memo.ts"),
        **{"shared-rule.ts": source_of("shared-rule.ts"), "legs.ts": source_of("legs.ts")},
    )
    assert res.status_code == 201, res.content
    version = ExtensionVersion.objects.get()
    # Only what the entry imports is stored: the unrelated legs.ts is not.
    assert sorted(version.source) == ["processes/po-with-memo.ts", "processes/shared-rule.ts"]
    assert version.compiled["processes/po-with-memo.ts"]["imports"] == {
        "@turbobase/extensions": "@turbobase/extensions",
        "./shared-rule.js": "processes/shared-rule.ts",
    }


def test_sibling_that_is_not_sent_is_refused_naming_it(admin_api):
    res = deploy(admin_api, "po-with-memo.ts", source_of("po-with-memo.ts"))
    assert_refused(
        res, status=400, error="invalid_extension", code="IMPORT_REFUSED", field="./shared-rule.js"
    )


def test_node_builtin_is_refused_naming_it(admin_api):
    source = "import { readFileSync } from 'node:fs';\n" + source_of("migrate-customers.ts")
    res = deploy(admin_api, "migrate-customers.ts", source)
    assert_refused(
        res, status=400, error="invalid_extension", code="IMPORT_REFUSED", field="node:fs"
    )
    assert "a Node builtin" in res.json()["rejection"]["message"]
