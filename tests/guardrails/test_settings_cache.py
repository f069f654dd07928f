"""Read-your-writes for instance settings: the per-process cache never serves, to a request or a
worker task, a value older than a write committed before that request or task began.

"Another process" writes here either really (a ``manage.py qcluster`` worker answers) or as one
looks from this process: a row changed with ``QuerySet.update`` / ``bulk_create``, which send no
signal, so nothing in this process clears its cache.
"""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_q.tasks import async_task, result

from guardrails.cache import TTL_S, TableCache, cache_boundary
from guardrails.models import InstanceSetting
from guardrails.settings import setting_get, setting_set
from tests.processes.engine_support import deploy, invoke, slow_chain
from tests.workers import QCluster, wait_until

KEY = "processes.batch_max_rows"  # default 1000


def _behind_our_back(value: int) -> None:
    """Store ``value`` as another process would: no signal here, so no clear of this cache."""
    if not InstanceSetting.objects.filter(key=KEY).update(value=value):
        InstanceSetting.objects.bulk_create([InstanceSetting(key=KEY, value=value)])


def _setting_reads(queries: CaptureQueriesContext) -> int:
    return sum('"guardrails_setting"' in q["sql"] for q in queries.captured_queries)


@pytest.mark.django_db
def test_a_request_that_begins_after_another_process_wrote_sees_the_write(admin_api):
    assert setting_get(KEY) == 1000  # cached in this process now
    _behind_our_back(7)
    assert setting_get(KEY) == 1000  # no boundary yet: served from memory, within the TTL
    res = admin_api.get("/v1/settings")  # a request begins: request_started is a boundary
    assert res.status_code == 200
    assert next(r["value"] for r in res.json()["settings"] if r["key"] == KEY) == 7


@pytest.mark.django_db
def test_a_worker_task_that_begins_after_another_process_wrote_sees_the_write():
    assert setting_get(KEY) == 1000
    _behind_our_back(8)
    # django-q2 runs the task through its worker function in this process (sync): pre_execute.
    task_id = async_task("guardrails.settings.setting_get", KEY, sync=True)
    assert result(task_id) == 8


@pytest.mark.django_db
def test_every_read_of_one_request_after_the_first_is_served_from_memory(admin_api):
    cache_boundary()
    with CaptureQueriesContext(connection) as queries:
        for _ in range(100):
            setting_get(KEY)
            setting_get("processes.enabled")
    assert _setting_reads(queries) == 1


@pytest.mark.django_db
def test_a_delivery_of_a_30_step_run_reads_the_settings_table_once(admin_user, alice):
    """The engine reads settings at every step; the boundary costs one query per delivery, not
    one per step (plus the one-second re-read a long delivery always had)."""
    from processes.engine.runner import run_deliver

    deploy(slow_chain("t:thirty", steps=30, step_ms=0), by=admin_user)
    run = invoke("t:thirty", {}, alice)
    cache_boundary()  # what django-q2's pre_execute does before the delivery
    began = time.monotonic()
    with CaptureQueriesContext(connection) as queries:
        run_deliver(str(run.pk))
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 30)
    assert _setting_reads(queries) <= 1 + int((time.monotonic() - began) / TTL_S)


def test_a_load_that_began_before_a_clear_is_not_served_after_it():
    """Another thread's write clears the cache while a load is in flight: that load's (older)
    rows are answered to its own caller but never served again."""
    versions = iter(["old", "new"])
    cache: TableCache[str]

    def load() -> str:
        value = next(versions)
        if value == "old":
            cache.clear()  # the write commits and clears while this load is reading
        return value

    cache = TableCache(load)
    assert cache.get() == "old"
    assert cache.get() == "new"


class _Loads:
    """A table's load that answers how many times it has run."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> int:
        self.count += 1
        return self.count


def test_only_a_cache_fresh_per_boundary_re_reads_after_a_boundary():
    fresh, timed = TableCache(_Loads(), fresh_per_boundary=True), TableCache(_Loads())
    assert (fresh.get(), fresh.get(), timed.get(), timed.get()) == (1, 1, 1, 1)
    cache_boundary()
    assert (fresh.get(), fresh.get(), timed.get()) == (2, 2, 1)


@pytest.mark.workers
@pytest.mark.django_db(transaction=True)
def test_a_task_a_real_worker_starts_after_a_write_sees_it_every_time(tmp_path):
    """One worker process (so its cache is warm from the task before): 30 writes from this
    process, each followed at once by a task that reads the setting in the worker."""
    extra_env = {"Q_CLUSTER_NAME": "turbobase"}
    with QCluster(workers=1, log_path=tmp_path / "qcluster.log", extra_env=extra_env) as cluster:
        stale = []
        for n in range(30):
            setting_set(KEY, 100 + n)
            task_id = async_task(
                "guardrails.settings.setting_get", KEY, cluster="turbobase", save=True
            )
            wait_until(
                lambda task_id=task_id: result(task_id) is not None,
                timeout=60,
                interval=0.02,
                message=f"task {task_id}\n{cluster.log_text()}",
            )
            if result(task_id) != 100 + n:
                stale.append((100 + n, result(task_id)))
    assert stale == []
