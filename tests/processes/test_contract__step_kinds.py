"""The keys a step may carry come from one table of step kinds (``processes.step_kinds``): the
deploy contract checks against it, the plan names kinds from it, and a misspelt key is answered
with every key of every kind."""

from __future__ import annotations

import re

import pytest

from extensions.models import ExtensionModule, ExtensionVersion
from extensions.store import module_version
from processes.engine.plan import PlannedStep
from processes.step_kinds import RECORD, STEP_KINDS, entry_kind

pytestmark = pytest.mark.django_db

# One entry of every kind the engine runs: a record step, a repeated group, AI, task, waitFor, sleep.
EVERY_KIND = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:every-kind',
  input: { type: 'object', properties: { items: { type: 'array' } } },
  steps: [
    { id: 'rec', recordType: 'legacy_customer', build: (ctx) => ({ parent: { name: 'r' } }) },
    { id: 'g', forEach: { input: 'items' },
      steps: [{ id: 'leg', recordType: 'legacy_customer', build: (ctx) => ({ parent: { name: 'l' } }) }] },
    { id: 'ask', ai: { prompt: (ctx) => 'why?' } },
    { id: 'approve', task: { assignee: 'alice', title: 'Approve' } },
    { id: 'paid', waitFor: { event: 'order.paid', timeout: '1d' } },
    { id: 'nap', sleep: '1s' },
  ],
});
"""

MISSPELT = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:misspelt',
  input: { type: 'object' },
  steps: [%s],
});
"""

EVERY_STEP_KEY = (
    "ai, awaitSource, build, delete, description, forEach, id, onRefused, recordType, rollback, "
    "sleep, steps, task, update, waitFor, when"
)


def _deploy(api, source: str):
    files = {"processes/p.ts": source}
    return api.post("/v1/extensions", {"entry": "processes/p.ts", "files": files}, format="json")


def _refusal(field: str, message: str) -> dict:
    return {
        "error": "invalid_extension",
        "rejection": {
            "code": "PROCESS_CONTRACT_INVALID",
            "field": field,
            "message": f"{field}: {message}",
        },
    }


def _nothing_stored() -> bool:
    return not ExtensionModule.objects.exists() and not ExtensionVersion.objects.exists()


def test_a_misspelt_step_key_is_refused_with_every_key_a_step_may_carry(admin_api):
    """Before: the list named the 9 keys of a record step and left out ai, task, sleep, waitFor,
    forEach and steps — and a misspelt marker ('waitfor') lands exactly here."""
    res = _deploy(
        admin_api,
        MISSPELT % "{ id: 'a', recrdType: 'legacy_customer', build: (ctx) => ({ parent: {} }) }",
    )
    assert (res.status_code, res.json()) == (
        400,
        _refusal("steps[0].recrdType", f"is not a key of a step (known: {EVERY_STEP_KEY})"),
    )
    assert _nothing_stored()
    res = _deploy(admin_api, MISSPELT % "{ id: 'w', waitfor: { event: 'x.y', timeout: '1d' } }")
    assert (res.status_code, res.json()) == (
        400,
        _refusal("steps[0].waitfor", f"is not a key of a step (known: {EVERY_STEP_KEY})"),
    )
    assert _nothing_stored()


def test_another_kinds_key_on_a_record_step_is_answered_with_the_record_steps_keys(admin_api):
    res = _deploy(
        admin_api,
        MISSPELT
        % "{ id: 'a', recordType: 'legacy_customer', description: 'd', build: (ctx) => ({ parent: {} }) }",
    )
    assert (res.status_code, res.json()) == (
        400,
        _refusal(
            "steps[0].description",
            "is not a key of a step that writes a record (known: awaitSource, build, delete, id, "
            "onRefused, recordType, rollback, update, when)",
        ),
    )
    assert _nothing_stored()


def test_a_misspelt_key_of_a_marked_kind_is_answered_with_that_kinds_keys(admin_api):
    res = _deploy(admin_api, MISSPELT % "{ id: 'nap', sleep: '1s', whn: (ctx) => true }")
    assert (res.status_code, res.json()) == (
        400,
        _refusal(
            "steps[0].whn",
            "is not a key of a sleep step (it writes no record) (known: description, id, sleep, when)",
        ),
    )


def test_every_step_kind_the_engine_accepts_appears_in_the_misspelt_key_list(admin_api):
    res = _deploy(admin_api, EVERY_KIND)
    assert res.status_code == 201, res.content
    entries = module_version("acme:every-kind", 1).definition["steps"]
    kinds = [entry_kind(entry) for entry in entries]
    assert set(kinds) == set(STEP_KINDS)  # the sample deploys one entry of every kind
    for entry, kind in zip(entries, kinds, strict=True):
        if kind.marker is not None and kind.name != "group":
            assert PlannedStep(entry["id"], (), entry).kind == kind.name  # the engine's own name
    assert PlannedStep("rec", (), entries[0]).kind == "create" and kinds[0] is RECORD
    message = _deploy(admin_api, MISSPELT % "{ id: 'a', zzz: 1 }").json()["rejection"]["message"]
    known = set(re.fullmatch(r".*\(known: (.*)\)", message).group(1).split(", "))
    for kind in STEP_KINDS:
        assert kind.keys <= known, kind.name
    assert {"ai", "task", "sleep", "waitFor", "forEach", "steps"} <= known
