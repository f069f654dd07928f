"""The purge lease: one purge at a time, across processes and hosts.

One row, taken by a conditional UPDATE (free, or its holder's lease ran out) and renewed after
every batch; a purge whose worker died frees it when the lease runs out. Not a transaction-long
row lock: a purge is many short transactions, so that it never holds a lock the queue waits on.
"""

from __future__ import annotations

from django.db import models

PURGE_LEASE_NAME = "purge"


class HistoryPurgeLease(models.Model):
    name = models.CharField(max_length=32, primary_key=True)
    owner = models.CharField(max_length=64, blank=True, default="")
    held_until = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "process_history_purge_lease"
        app_label = "processes"

    def __str__(self) -> str:
        return f"history {self.name} lease ({self.owner or 'free'})"
