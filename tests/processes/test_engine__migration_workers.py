"""The acceptance migration: 12,000 rows in real workers, SIGKILLed mid-slice twice, exactly once."""

from __future__ import annotations

from pathlib import Path

from processes.invoke import run_invoke
from processes.models import ProcessRun
from records.models import Record
from tests.processes.engine_support import deploy
from tests.processes.test_engine__migration import _items
from tests.processes.writes_support import assert_writes_counted
from tests.workers import QCluster, postgres_workers, sweeping_until

FIXTURE = (
    Path(__file__).parent.parent
    / "extensions"
    / "fixtures"
    / "processes"
    / "migrate-customers-tracked.ts"
)
ROWS = 12_000
FAST_RECOVERY = {
    "TURBOBASE_RUN_LEASE_S": "5",
    "TURBOBASE_TASK_TIMEOUT": "900",
    "TURBOBASE_TASK_RETRY": "960",
    "TURBOBASE_ASYNC_WORKERS": "1",
}

pytestmark = postgres_workers(
    "12,000 rows with two SIGKILLs is the PostgreSQL acceptance run; "
    "the same engine paths run on SQLite in test_engine__migration.py"
)


def _customers() -> int:
    return Record.reads.filter(record_type="customer").count()


def _sweep_until_terminal(run_id, timeout: float) -> None:
    """The broker re-delivers a killed slice only after its retry window: the sweep re-queues it."""
    sweeping_until(
        lambda: ProcessRun.objects.get(pk=run_id).state not in ("queued", "running"),
        timeout=timeout,
        interval=2.0,
        message="the migration to end",
    )


def test_twelve_thousand_rows_survive_two_sigkills_and_a_rerun_writes_nothing(
    admin_user, alice, tmp_path
):
    deploy(FIXTURE.read_text(), by=admin_user)
    _items(alice, ROWS)
    run = run_invoke(
        process_id="acme:migrate-customers-tracked", body={"batch": "2026-10"}, user=alice
    )
    cluster = QCluster(
        workers=2, log_path=tmp_path / "q.log", extra_env=FAST_RECOVERY, ready_timeout=60
    )
    for kill_at in (1_700, 6_300):  # mid-slice: slices are 500 rows
        cluster.start()
        sweeping_until(
            lambda kill_at=kill_at: _customers() >= kill_at,
            timeout=600,
            interval=2.0,
            message=f"{kill_at} customers",
        )
        cluster.kill()
        assert_writes_counted(run.pk)  # what the dead workers left: the next claim's count
    with cluster:
        _sweep_until_terminal(run.pk, timeout=900)
        run.refresh_from_db()
        assert (run.state, run.outstanding, run.reason) == ("committed", 0, None), run.reason
        assert run.slices == ROWS // 500
        assert_writes_counted(run.pk)
        assert _customers() == ROWS
        assert (
            Record.reads.filter(record_type="migration_item", fields__status="sent").count() == ROWS
        )
        creates = run.ledger.filter(step_id="create")
        assert creates.filter(disposition="confirmed").count() == ROWS
        assert creates.values("row_key").distinct().count() == ROWS

        again = run_invoke(
            process_id="acme:migrate-customers-tracked", body={"batch": "2026-10"}, user=alice
        )
        _sweep_until_terminal(again.pk, timeout=120)
        again.refresh_from_db()
        assert (again.state, again.outstanding, again.ledger.count()) == ("committed", 0, 0)
        assert _customers() == ROWS
