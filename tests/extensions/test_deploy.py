"""The deploy service and the module store: versions, outcomes, refusals, the worker's loader."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from extensions.deploy import ExtensionLoadFailed, extension_deploy, extension_remove
from extensions.errors import (
    ConduitNotSupported,
    ExtensionIdMismatch,
    ExtensionInUse,
    ExtensionInvalid,
    ExtensionNotFound,
)
from extensions.models import ExtensionModule, ExtensionVersion
from extensions.sandbox import Sandbox, SandboxLimits
from extensions.signals import extension_deployed, extension_removing
from extensions.store import module_load, module_served, module_version, store_forget

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated(settings) -> Iterator[None]:
    settings.EXTENSIONS_DEPLOY_CPU_MS = 300
    yield
    store_forget()


def fixture(path: str) -> str:
    return (FIXTURES / path).read_text(encoding="utf-8")


def process_source(*, process_id: str = "acme:one", memo: str = "first") -> str:
    return f"""import {{ defineProcess }} from '@turbobase/extensions';

export default defineProcess({{
  id: '{process_id}',
  input: {{ type: 'object' }},
  steps: [
    {{ id: 'so', recordType: 'salesOrder', build: (ctx) => ({{ parent: {{ memo: '{memo}' }} }}) }},
  ],
}});
"""


def deploy_one(source: str, *, by, name: str = "processes/one.ts"):
    return extension_deploy(entry=name, files={name: source}, by=by)


def counts() -> tuple[int, int]:
    return ExtensionModule.objects.count(), ExtensionVersion.objects.count()


def test_first_deploy_is_written_and_stores_everything(admin_user):
    source = process_source()
    result = deploy_one(source, by=admin_user)
    assert (result.id, result.kind, result.version, result.outcome, result.status) == (
        "acme:one",
        "process",
        1,
        "written",
        "active",
    )
    module = ExtensionModule.objects.get()
    version = ExtensionVersion.objects.get()
    assert (module.id, module.kind, module.version, module.status) == (
        "acme:one",
        "process",
        1,
        "active",
    )
    assert module.definition["steps"][0]["build"] == {"$fn": True, "async": False}
    assert (version.module_id, version.version, version.entry) == (
        "acme:one",
        1,
        "processes/one.ts",
    )
    assert version.source == {"processes/one.ts": source}
    compiled = version.compiled["processes/one.ts"]
    assert "exports.default = (0, extensions_1.defineProcess)" in compiled["code"]
    assert json.loads(compiled["map"])["version"] == 3
    canonical = json.dumps(
        [["processes/one.ts", source]], ensure_ascii=False, separators=(",", ":")
    )
    assert version.sha256 == hashlib.sha256(canonical.encode()).hexdigest()
    assert version.deployed_by == admin_user
    assert version.deployed_at is not None
    assert version.definition == module.definition


def test_redeploy_is_duplicate_stores_the_new_code_and_keeps_the_old_version(admin_user):
    deploy_one(process_source(memo="first"), by=admin_user)
    result = deploy_one(process_source(memo="second"), by=admin_user)
    assert (result.version, result.outcome) == (2, "duplicate")
    assert counts() == (1, 2)
    assert ExtensionModule.objects.get().version == 2
    first, second = ExtensionVersion.objects.order_by("version")
    assert "'first'" in first.source["processes/one.ts"]
    assert "'second'" in second.source["processes/one.ts"]
    assert first.sha256 != second.sha256


def test_identical_redeploy_is_still_a_new_version(admin_user):
    deploy_one(process_source(), by=admin_user)
    result = deploy_one(process_source(), by=admin_user)
    assert (result.version, result.outcome) == (2, "duplicate")
    first, second = ExtensionVersion.objects.order_by("version")
    assert first.sha256 == second.sha256


def test_deployed_signal_carries_the_module_and_outcome(admin_user):
    seen: list[tuple[str, int, str]] = []

    def receiver(sender, *, module, outcome, **kwargs):
        seen.append((module.id, module.version, outcome))

    extension_deployed.connect(receiver)
    try:
        deploy_one(process_source(), by=admin_user)
        deploy_one(process_source(), by=admin_user)
    finally:
        extension_deployed.disconnect(receiver)
    assert seen == [("acme:one", 1, "written"), ("acme:one", 2, "duplicate")]


def test_worker_loads_the_pinned_version_while_a_new_one_is_served(admin_user):
    deploy_one(process_source(memo="first"), by=admin_user)
    pinned = module_served("acme:one").version
    deploy_one(process_source(memo="second"), by=admin_user)
    assert module_served("acme:one").version == 2  # a deploy here forgets the cached answer
    with Sandbox(limits=SandboxLimits(call_budget_ms=500)) as sandbox:
        loaded = module_load(sandbox, module_id="acme:one", version=pinned)
        assert loaded.kind == "process"
        assert sandbox.call(["steps", 0, "build"], [], ctx={"input": {}}) == {
            "parent": {"memo": "first"}
        }
        module_load(sandbox, module_id="acme:one", version=2)
        assert sandbox.call(["steps", 0, "build"], [], ctx={"input": {}}) == {
            "parent": {"memo": "second"}
        }


def test_served_version_is_cached_up_to_the_ttl(admin_user):
    deploy_one(process_source(memo="first"), by=admin_user)
    assert module_served("acme:one").version == 1
    # Another process deploying (no forget here) is seen only once the TTL has passed.
    ExtensionModule.objects.filter(pk="acme:one").update(version=5)
    assert module_served("acme:one").version == 1
    store_forget()
    assert module_served("acme:one").version == 5


def test_a_pinned_version_of_a_removed_module_still_loads(admin_user):
    deploy_one(process_source(), by=admin_user)
    extension_remove(module_id="acme:one", by=admin_user)
    assert module_served("acme:one") is None
    assert module_version("acme:one", 1).bundle.entry == "processes/one.ts"
    with pytest.raises(ExtensionNotFound):
        module_version("acme:one", 2)


def test_sibling_import_runs_through_the_loader(admin_user):
    files = {
        "processes/po-with-memo.ts": fixture("processes/po-with-memo.ts"),
        "processes/shared-rule.ts": fixture("processes/shared-rule.ts"),
    }
    result = extension_deploy(entry="processes/po-with-memo.ts", files=files, by=admin_user)
    with Sandbox() as sandbox:
        module_load(sandbox, module_id=result.id, version=result.version)
        built = sandbox.call(["steps", 0, "build"], [], ctx={"input": {"vendorId": "V1"}})
    assert built == {
        "parent": {"entity_id": "V1", "memo": "raised by acme:po-with-memo"},
        "lines": [{"item": "x"}],
    }


def test_infinite_loop_at_top_level_fails_with_the_sandbox_timeout(admin_user):
    source = process_source() + "\nwhile (true) {}\n"
    with pytest.raises(ExtensionLoadFailed) as refused:
        deploy_one(source, by=admin_user)
    assert refused.value.code == "sandbox_timeout"
    assert refused.value.http_status == 422
    assert refused.value.message.startswith("sandbox_timeout: CPU budget of 300 ms exceeded")
    assert counts() == (0, 0)


def test_top_level_throw_is_refused_with_its_line_in_the_author_file(admin_user):
    source = process_source() + "\nconst broken: any = null;\nbroken.boom();\n"
    with pytest.raises(ExtensionLoadFailed) as refused:
        deploy_one(source, by=admin_user)
    assert refused.value.code == "sandbox_script_error"
    # The line is the author's (the TypeScript was transpiled); the column is the sandbox's to map.
    assert refused.value.field.startswith("processes/one.ts:12:")
    assert f"(at {refused.value.field})" in refused.value.message
    assert refused.value.message.startswith("sandbox_script_error: TypeError: ")
    assert counts() == (0, 0)


def test_syntax_error_is_refused_with_its_position(admin_user):
    with pytest.raises(ExtensionInvalid) as refused:
        deploy_one("export default defineProcess({ id: 'acme:x', ", by=admin_user)
    assert (refused.value.code, refused.value.field) == (
        "extension_syntax_error",
        "processes/one.ts:1:46",
    )
    assert counts() == (0, 0)


def test_conduit_is_refused_in_a_sentence(admin_user):
    source = (
        "import { defineConduit } from '@turbobase/extensions';\n"
        "export default defineConduit({ id: 'acme:bridge' });\n"
    )
    with pytest.raises(ConduitNotSupported) as refused:
        deploy_one(source, by=admin_user)
    assert refused.value.body() == {
        "error": "invalid_extension",
        "rejection": {
            "code": "CONDUIT_NOT_SUPPORTED",
            "field": "default",
            "message": "conduits are not supported on this instance yet; deploy processes (defineProcess) "
            "and hooks (defineHook)",
        },
    }
    assert counts() == (0, 0)


@pytest.mark.parametrize(
    "source",
    [
        "export default { id: 'acme:plain', input: { type: 'object' }, steps: [] };\n",
        "export const id = 'acme:nothing';\n",
    ],
)
def test_default_export_not_defined_by_the_sdk_is_refused(admin_user, source):
    with pytest.raises(ExtensionInvalid) as refused:
        deploy_one(source, by=admin_user)
    assert (refused.value.code, refused.value.field) == ("EXTENSION_INVALID", "default")
    assert counts() == (0, 0)


def test_no_id_literal_at_all_is_a_mismatch(admin_user):
    source = process_source().replace("id: 'acme:one'", "id: ['acme', 'one'].join(':')")
    with pytest.raises(ExtensionIdMismatch) as refused:
        deploy_one(source, by=admin_user)
    assert refused.value.extra == {"literal": "so", "id": "acme:one"}  # the step's id came first
    assert counts() == (0, 0)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (("recordType: 'customer'", "recordType: 'nope'"), "recordType"),
        (("on: 'before_save'", "on: 'after_save'"), "on"),
        (("run(ctx) {", "notRun(ctx) {"), "run"),
    ],
)
def test_hook_contract_is_checked_with_the_field_named(admin_user, change, field):
    source = fixture("hooks/require-memo.ts").replace(*change)
    files = {
        "hooks/require-memo.ts": source,
        "hooks/shared-rule.ts": fixture("hooks/shared-rule.ts"),
    }
    with pytest.raises(ExtensionInvalid) as refused:
        extension_deploy(entry="hooks/require-memo.ts", files=files, by=admin_user)
    assert (refused.value.code, refused.value.field) == ("HOOK_CONTRACT_INVALID", field)
    assert counts() == (0, 0)


def test_changing_an_active_id_to_another_kind_is_refused(admin_user):
    deploy_one(process_source(process_id="acme:require-memo"), by=admin_user)
    files = {
        "hooks/require-memo.ts": fixture("hooks/require-memo.ts"),
        "hooks/shared-rule.ts": fixture("hooks/shared-rule.ts"),
    }
    with pytest.raises(ExtensionInvalid) as refused:
        extension_deploy(entry="hooks/require-memo.ts", files=files, by=admin_user)
    assert refused.value.field == "id"
    assert counts() == (1, 1)


@pytest.mark.parametrize(
    ("entry", "files", "field"),
    [
        ("processes/one.ts", {}, "files"),
        ("processes/one.ts", {"../one.ts": "x"}, "files.../one.ts"),
        ("processes/one.ts", {"/abs/one.ts": "x"}, "files./abs/one.ts"),
        ("processes/one.ts", {"processes/./one.ts": "x"}, "files.processes/./one.ts"),
        ("processes/two.ts", {"processes/one.ts": "x"}, "entry"),
        ("processes/one.json", {"processes/one.json": "{}"}, "entry"),
    ],
)
def test_malformed_bundles_are_refused_naming_the_field(admin_user, entry, files, field):
    with pytest.raises(ExtensionInvalid) as refused:
        extension_deploy(entry=entry, files=files, by=admin_user)
    assert refused.value.field == field
    assert counts() == (0, 0)


def test_remove_sends_removing_first_and_keeps_the_versions(admin_user):
    deploy_one(process_source(), by=admin_user)
    seen: list[tuple[str, str, str]] = []

    def receiver(sender, *, module_id, kind, **kwargs):
        seen.append((module_id, kind, ExtensionModule.objects.get(pk=module_id).status))

    extension_removing.connect(receiver)
    try:
        module = extension_remove(module_id="acme:one", by=admin_user)
    finally:
        extension_removing.disconnect(receiver)
    assert seen == [("acme:one", "process", "active")]
    assert module.status == "removed"
    assert ExtensionModule.objects.get().status == "removed"
    assert counts() == (1, 1)


def test_a_removing_receiver_can_refuse_and_nothing_changes(admin_user):
    deploy_one(process_source(), by=admin_user)

    def refuse(sender, *, module_id, **kwargs):
        raise ExtensionInUse(f"schedule nightly still runs {module_id}", field="schedule")

    extension_removing.connect(refuse)
    try:
        with pytest.raises(ExtensionInUse):
            extension_remove(module_id="acme:one", by=admin_user)
    finally:
        extension_removing.disconnect(refuse)
    assert ExtensionModule.objects.get().status == "active"


def test_redeploying_a_removed_id_is_new_again_with_the_next_version(admin_user):
    deploy_one(process_source(), by=admin_user)
    extension_remove(module_id="acme:one", by=admin_user)
    result = deploy_one(process_source(), by=admin_user)
    assert (result.version, result.outcome) == (2, "written")
    assert ExtensionModule.objects.get().status == "active"
