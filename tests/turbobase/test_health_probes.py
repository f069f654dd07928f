"""``/v1/health/live`` and ``/v1/health/ready`` (issue 22, item 6): JSON, 200 or 503."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from processes.heartbeats import ClusterHeartbeat, heartbeat_beat
from tests.workers import LANES, QCluster, wait_until


def test_live_answers_without_credentials_or_database():
    res = APIClient().get("/v1/health/live")
    assert (res.status_code, res.json()) == (200, {"status": "ok"})


@pytest.mark.django_db
def test_ready_is_503_while_no_worker_cluster_was_seen_naming_the_check():
    res = APIClient().get("/v1/health/ready")
    assert res.status_code == 503
    body = res.json()
    assert (body["error"], body["message"]) == ("not_ready", "not ready: workers")
    assert body["status"] == "unready"
    assert body["checks"]["database"] == {"ok": True}
    assert body["checks"]["migrations"] == {"ok": True}
    assert body["checks"]["broker"] == {"ok": True}
    assert body["checks"]["workers"] == {
        "ok": False,
        "message": "no worker cluster seen in the last 60 s",
    }
    assert body["clusters"] == []


@pytest.mark.django_db
def test_a_heartbeat_older_than_60_s_does_not_count_and_a_fresh_one_does():
    heartbeat_beat("tb_async")
    ClusterHeartbeat.objects.update(seen_at=timezone.now() - timedelta(seconds=61))
    assert APIClient().get("/v1/health/ready").status_code == 503
    heartbeat_beat("tb_async")  # the same row, seen now
    res = APIClient().get("/v1/health/ready")
    assert res.status_code == 200, res.json()
    assert res.json()["status"] == "ready"
    assert res.json()["clusters"] == [f"tb_async@{socket.gethostname()}"]
    assert ClusterHeartbeat.objects.count() == 1


@pytest.mark.django_db
def test_ready_is_503_while_a_migration_is_not_applied(monkeypatch):
    from django.db.migrations.loader import MigrationLoader

    import turbobase.health

    heartbeat_beat("turbobase")
    monkeypatch.setattr(turbobase.health, "_migrated", False)
    # The processes room's newest migration (a leaf: an older one unapplied under an applied
    # leaf is not in Django's plan).
    (latest,) = [
        name for app, name in MigrationLoader(connection).graph.leaf_nodes() if app == "processes"
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM django_migrations WHERE app = 'processes' AND name = %s", [latest]
        )
    res = APIClient().get("/v1/health/ready")
    assert res.status_code == 503
    migrations = res.json()["checks"]["migrations"]
    assert migrations["ok"] is False
    assert f"processes.{latest}" in migrations["message"]


@pytest.mark.workers
@pytest.mark.django_db(transaction=True)
def test_ready_once_a_real_worker_cluster_beats(tmp_path):
    assert APIClient().get("/v1/health/ready").status_code == 503
    with QCluster(workers=1, log_path=tmp_path / "q.log"):
        wait_until(
            lambda: APIClient().get("/v1/health/ready").status_code == 200,
            timeout=30,
            message="ready",
        )

        def lanes_beating() -> list[str]:
            clusters = APIClient().get("/v1/health/ready").json()["clusters"]
            return sorted(c.split("@")[0] for c in clusters)

        # Ready at the first lane's beat; every lane beats within its first 10 s.
        wait_until(lambda: lanes_beating() == sorted(LANES), timeout=60, message="every lane")
