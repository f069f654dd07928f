"""``/v1/health/live`` and ``/v1/health/ready``: what an orchestrator asks (JSON, 200 or 503).

- live: the process answers — nothing else is touched, so a database outage never gets a healthy
  web process restarted.
- ready: the database answers, the broker is reachable (the ORM broker's queue table, or Redis's
  PING), every migration is applied, and at least one worker cluster was seen alive in the last
  60 s (``processes.heartbeats``: each lane's cluster writes its row every 10 s). Each check says
  whether it is ok and, when not, why; any not ok is a 503 whose body is the one error body
  (``not_ready``) with the same facts.

``/v1/health`` stays as it was (answers and touches the database).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django_q.brokers import Broker, get_broker
from django_q.brokers.orm import ORM
from django_q.conf import Conf
from django_q.models import OrmQ
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.openapi import ErrorSerializer
from processes.heartbeats import SEEN_WITHIN_S, clusters_seen
from turbobase.codes import EdgeCode
from turbobase.serializers import LiveOut, ReadyOut

Check = dict[str, Any]


class LiveView(APIView):
    """The process answers (no database, no broker)."""

    permission_classes = [AllowAny]
    scope_exempt = "an orchestrator's liveness probe answers without credentials"
    authentication_classes = []

    @extend_schema(responses={200: LiveOut})
    def get(self, request: Request) -> Response:
        return Response({"status": "ok"})


def _database() -> Check:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return {"ok": True}


_migrated = False


def _migrations() -> Check:
    """Every migration applied (once true, a running process does not read the files again)."""
    global _migrated
    if not _migrated:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if pending:
            names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in pending[:5])
            return {"ok": False, "message": f"{len(pending)} migration(s) not applied: {names}"}
        _migrated = True
    return {"ok": True}


@cache
def _broker() -> Broker:
    return get_broker()


def _broker_check() -> Check:
    broker = _broker()
    if isinstance(broker, ORM):  # the queue is a table: can it be read?
        OrmQ.objects.using(Conf.ORM).filter(pk=0).exists()
    elif not broker.ping():
        return {"ok": False, "message": f"the broker ({broker.info()}) does not answer"}
    return {"ok": True}


def _checked(check: Callable[[], Check]) -> Check:
    try:
        return check()
    except Exception as exc:  # any failure is "not ready", and says why
        if isinstance(exc, DatabaseError):
            connection.close_if_unusable_or_obsolete()
        return {"ok": False, "message": f"{type(exc).__name__}: {exc}"[:500]}


class ReadyView(APIView):
    """Ready for traffic: database, broker, migrations, and a worker cluster alive."""

    permission_classes = [AllowAny]
    scope_exempt = "an orchestrator's readiness probe answers without credentials"
    authentication_classes = []

    @extend_schema(
        responses={
            200: ReadyOut,
            503: OpenApiResponse(
                ErrorSerializer,
                description="Not ready (error not_ready): the body adds status, checks and "
                "clusters as the 200 answer has them; the failed checks say why.",
            ),
        }
    )
    def get(self, request: Request) -> Response:
        checks = {"database": _checked(_database)}
        reachable = checks["database"]["ok"]
        checks["migrations"] = _checked(_migrations) if reachable else _skipped()
        checks["broker"] = _checked(_broker_check)
        clusters: list[str] = []
        if reachable:
            checks["workers"], clusters = _workers()
        else:
            checks["workers"] = _skipped()
        ready = all(c["ok"] for c in checks.values())
        body: dict[str, Any] = {
            "status": "ready" if ready else "unready",
            "checks": checks,
            "clusters": clusters,
        }
        if not ready:  # the one error body, with the checks as its facts
            failed = ", ".join(name for name, check in checks.items() if not check["ok"])
            body = {"error": EdgeCode.NOT_READY, "message": f"not ready: {failed}", **body}
        response = Response(body, status=200 if ready else 503)
        # An orchestrator asks every few seconds: "not ready" is an answer, not a server error
        # for django.request to log each time (the body says which check failed).
        response._has_been_logged = True  # type: ignore[attr-defined]
        return response


def _skipped() -> Check:
    return {"ok": False, "message": "the database does not answer"}


def _workers() -> tuple[Check, list[str]]:
    try:
        seen = clusters_seen()
    except Exception as exc:  # the table is missing (migrations not applied), the database blinked
        return {"ok": False, "message": f"{type(exc).__name__}: {exc}"[:500]}, []
    names = [f"{beat.cluster}@{beat.host}" for beat in seen]
    if not names:
        message = f"no worker cluster seen in the last {SEEN_WITHIN_S:g} s"
        return {"ok": False, "message": message}, []
    return {"ok": True}, names
