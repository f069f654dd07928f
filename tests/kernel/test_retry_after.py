"""Every 429 the API answers carries ``Retry-After``: when it is known, the real wait."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.exceptions import Throttled

from guardrails.settings import setting_set
from kernel.errors import TurbobaseError
from kernel.http import RETRY_AFTER_DEFAULT_S, exception_handler
from records.boundary import record_create
from records.trail import Actor

pytestmark = pytest.mark.django_db


def test_a_delete_over_the_cap_says_when_the_window_frees(alice, alice_api):
    setting_set("guardrails.max_deletes_per_min", 1)
    first, second = (
        record_create(
            actor=Actor(user=alice), record_type="customer", parent={"company_name": n}
        ).record
        for n in ("A", "B")
    )
    assert (
        alice_api.delete("/v1/data/customer", {"pgRowId": str(first.pk)}, format="json").status_code
        == 202
    )
    res = alice_api.delete("/v1/data/customer", {"pgRowId": str(second.pk)}, format="json")
    assert res.status_code == 429
    assert res.json()["rejection"]["code"] == "DELETE_CAP_EXCEEDED"
    assert 1 <= int(res["Retry-After"]) <= 60
    second.refresh_from_db()
    assert second.sync_state == "pending"


def test_drf_throttling_answers_its_own_wait():
    res = exception_handler(Throttled(wait=12.2), {})
    assert (res.status_code, res["Retry-After"]) == (429, "13")


def test_a_domain_429_that_knows_its_time_answers_it():
    class Busy(TurbobaseError):
        http_status = 429

    busy = Busy()
    busy.retry_at = timezone.now() + timedelta(seconds=30)
    assert 29 <= int(exception_handler(busy, {})["Retry-After"]) <= 30


def test_a_429_that_cannot_say_when_still_says_back_off():
    class Crowded(TurbobaseError):
        http_status = 429

    res = exception_handler(Crowded(), {})
    assert (res.status_code, res["Retry-After"]) == (429, str(RETRY_AFTER_DEFAULT_S))


def test_other_statuses_carry_no_retry_after():
    assert "Retry-After" not in exception_handler(TurbobaseError("bad"), {})
