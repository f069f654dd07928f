"""The run tally's tables (``processes.run_tally``): the queue's counts kept without reading runs."""

from __future__ import annotations

from django.db import models


class ProcessRunTally(models.Model):
    """How many runs are in each state, per (process, mode, invoker): the queue's counts without
    reading the run table. Written only by ``processes.run_tally.tally_fold`` from the deltas.

    ``invoked_by_id`` is 0 for a run nobody invoked (NULL would defeat the upsert's conflict)."""

    id = models.BigAutoField(primary_key=True)
    process_id = models.CharField(max_length=200)
    mode = models.CharField(max_length=8)
    invoked_by_id = models.IntegerField()
    state = models.CharField(max_length=16)
    n = models.BigIntegerField(default=0)

    class Meta:
        db_table = "process_run_tally"
        constraints = [
            models.UniqueConstraint(
                fields=["process_id", "mode", "invoked_by_id", "state"], name="run_tally_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.process_id} {self.mode} by {self.invoked_by_id}: {self.state} {self.n}"


class ProcessRunTallyDelta(models.Model):
    """One change to the tally not folded in yet (+n into a state, -n out of one), appended by
    database triggers on ``process_run`` (migration 0016) for every insert, delete and change of
    state, mode, process or invoker, whoever makes it: appending takes no lock another run waits on.
    """

    id = models.BigAutoField(primary_key=True)
    process_id = models.CharField(max_length=200)
    mode = models.CharField(max_length=8)
    invoked_by_id = models.IntegerField()
    state = models.CharField(max_length=16)
    n = models.BigIntegerField()

    class Meta:
        db_table = "process_run_tally_delta"

    def __str__(self) -> str:
        return f"{self.process_id} {self.mode} by {self.invoked_by_id}: {self.state} {self.n:+d}"
