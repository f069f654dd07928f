"""One searchable input value of one run (``processes.run_search``)."""

from __future__ import annotations

from django.db import models


class RunSearchKey(models.Model):
    """``run``'s input field ``field`` held ``value`` (its text form: ``search_value``).

    Written with the run, never changed; deleted with it. A search reads the run ids of one
    (field, value) from the index alone, then pages those runs newest first."""

    run = models.ForeignKey(
        "processes.ProcessRun", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    process_id = models.CharField(max_length=200)
    field = models.CharField(max_length=100)
    value = models.CharField(max_length=200)

    class Meta:
        db_table = "process_run_search_key"
        indexes = [
            models.Index(fields=["field", "value", "run"], name="run_search_key_value"),
            models.Index(fields=["run"], name="run_search_key_run"),
        ]

    def __str__(self) -> str:
        return f"{self.process_id} {self.field}={self.value}"
