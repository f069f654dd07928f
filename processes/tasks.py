"""django-q2 entry points of the processes room (kept thin: the engine does the work)."""

from __future__ import annotations


def run_deliver(run_id: str, delivery: int | None = None) -> None:
    from processes.engine.claim import run_claim
    from processes.engine.runner import run_deliver as deliver
    from processes.observe import delivery_observed

    # Claimed here, so the delivery's lines and span know the run (the engine takes it as is).
    claimed = run_claim(run_id, delivery)
    if claimed is None:
        return
    delivery_observed(claimed[0], lambda: deliver(run_id, delivery, claimed=claimed))


def run_wake(run_id: str) -> None:
    from processes.engine.ending import run_redeliver

    run_redeliver(run_id)


def run_tally_fold() -> int:
    from processes.run_tally import tally_fold

    return tally_fold()


def runs_sweep() -> int:
    from processes.engine.wakeups import waits_sweep
    from processes.events.service import events_undelivered_deliver

    events_undelivered_deliver()  # events whose sender died before delivering them
    return waits_sweep()


def runs_timeout_sweep() -> int:
    from processes.run_timeout import runs_timeout_sweep as sweep

    return sweep()


def history_purge() -> int:
    from processes.history.purge import history_purge_scheduled

    return history_purge_scheduled()
