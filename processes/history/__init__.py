"""The run history's retention: finished runs past ``history.retain_days`` / ``history.retain_runs``
are purged with what belongs to them (``purge.history_purge``), optionally archived first."""
