"""Processes → Schedules and the module store's pages: paused reads "paused", source reads as code."""

from __future__ import annotations

from datetime import timedelta

import pytest

from extensions.models import ExtensionVersion
from processes.schedules.firing import schedules_fire_due
from tests.processes.test_schedules_firing import DUE, NOTES, entry, module, schedule_deploy

pytestmark = pytest.mark.django_db

SCHEDULES = "/admin/processes/processschedule/"


def test_a_paused_schedule_reads_paused_with_its_reason_not_a_green_tick(admin_user, operator):
    schedule_deploy(
        admin_user,
        entry("acme:notes", input={}),
        entry("acme:notes", name="weekly", expr="0 3 * * 1"),
        modules=(module("notes.ts", NOTES % "'memo'"),),
    )
    for n in range(5):
        schedules_fire_due(DUE + timedelta(days=n))
    page = operator.get(SCHEDULES).content.decode()
    assert (
        '<strong class="schedule-paused" title="paused after 5 failed firings in a row; the last (input.memo): '
        '&#x27;memo&#x27; is a required property">paused</strong>' in page
    )
    assert "icon-yes.svg" not in page and "icon-no.svg" not in page
    detail = operator.get(f"{SCHEDULES}nightly/change/").content.decode()
    assert 'class="schedule-paused"' in detail
    # Both schedules of the one process are on the Processes screen, the paused one marked.
    processes = operator.get("/admin/processes/process/").content.decode()
    assert f"{SCHEDULES}nightly/change/" in processes and f"{SCHEDULES}weekly/change/" in processes


def test_an_active_schedule_reads_active(admin_user, operator):
    schedule_deploy(
        admin_user, entry("acme:notes", input={}), modules=(module("notes.ts", NOTES % ""),)
    )
    page = operator.get(SCHEDULES).content.decode()
    assert '<span class="schedule-active">active</span>' in page


def test_extension_source_is_shown_as_code(operator, two_notes):
    version = ExtensionVersion.objects.get(module_id=two_notes)
    res = operator.get(f"/admin/extensions/extensionversion/{version.pk}/change/")
    assert res.status_code == 200
    page = res.content.decode()
    source = next(iter(version.source.values()))
    first_line = source.splitlines()[0].replace("'", "&#x27;")
    assert first_line == "import { defineProcess } from &#x27;@turbobase/extensions&#x27;;"
    assert f'<pre style="white-space: pre-wrap; max-width: 100%">{first_line}\n' in page
    assert "\\n" not in page.split("<pre", 1)[1].split("</pre>", 1)[0]  # real newlines, not JSON's
