"""Waking drains: a committed write queues one, a held lane stands it down, the sweep finds strays."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from records.boundary import record_create
from records.door import door_open
from records.models import RecordWriteState
from sources.lanes import lane_acquire, lane_release
from sources.outbound import outbound_sweep
from sources.tasks import outbound_sweep_task

pytestmark = pytest.mark.django_db


def _queued(queue: str = "turbobase") -> list[tuple[str, tuple]]:
    return [
        (task["func"], task["args"])
        for task in (
            SignedPackage.loads(q.payload) for q in OrmQ.objects.filter(key=queue).order_by("id")
        )
    ]


def _customer(actor, name: str = "Acme"):
    return record_create(actor=actor, record_type="customer", parent={"company_name": name}).record


def test_a_committed_write_queues_a_drain_of_its_type(
    alice_actor, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        _customer(alice_actor)

    assert _queued() == [("sources.tasks.outbound_drain_task", ("customer",))]


def test_a_write_made_on_a_run_lane_queues_its_drain_on_the_turbobase_cluster(
    alice_actor, django_capture_on_commit_callbacks, monkeypatch
):
    # A worker of the tb_async lane runs with Q_CLUSTER_NAME=tb_async: django-q2's default queue.
    monkeypatch.setattr(Conf, "CLUSTER_NAME", "tb_async")
    with django_capture_on_commit_callbacks(execute=True):
        _customer(alice_actor)

    assert _queued() == [("sources.tasks.outbound_drain_task", ("customer",))]
    assert _queued("tb_async") == []  # run deliveries never wait behind drains


def test_no_drain_is_queued_while_one_holds_the_lane(
    alice_actor, django_capture_on_commit_callbacks
):
    assert lane_acquire(record_type="customer", token="busy", seconds=60)

    with django_capture_on_commit_callbacks(execute=True):
        _customer(alice_actor)

    assert _queued() == []  # the holder looks again after letting go


def test_sweep_wakes_due_lanes_that_nobody_drains(alice_actor):
    _customer(alice_actor)
    record_create(actor=alice_actor, record_type="salesOrder", parent={})
    later = record_create(actor=alice_actor, record_type="entity", parent={}).record
    with door_open():
        RecordWriteState.objects.filter(record=later).update(
            next_attempt_at=timezone.now() + timedelta(minutes=5)
        )
    assert lane_acquire(record_type="salesOrder", token="busy", seconds=60)

    assert outbound_sweep_task() == ["customer"]
    assert _queued() == [("sources.tasks.outbound_drain_task", ("customer",))]

    lane_release(record_type="salesOrder", token="busy")
    assert outbound_sweep() == ["customer", "salesOrder"]
