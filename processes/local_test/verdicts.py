"""The connected systems of a local run: every source answers here, from the verdicts file.

A local run must never reach a real system, so while it goes every source of the catalog is
served by ``VerdictAdapter``: a record type the verdicts file names is confirmed (with the id it
gives), refused (with its code), answered "unavailable" a number of times before it is
confirmed (the outbound retry backoff between, skipped), or never answered; any other type is answered as the built-in
``sandbox`` source answers (ids minted per prefix, mandatory fields, atomic transaction writes).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.test.utils import override_settings

from processes.local_test.files import Verdict
from records.catalog import catalog_reset
from sources.adapters import adapter_register
from sources.adapters.base import OutboundWrite, Outcome, confirmed, refused, transient
from sources.adapters.sandbox import SandboxAdapter

ADAPTER_NAME = "local_test_verdicts"

# The verdicts of the local run going in this process (one at a time: the clock is global too).
_verdicts: dict[tuple[str, str], Verdict] = {}
_failed: dict[tuple[str, str], int] = {}  # transient failures answered so far, per type/operation


def verdict_for(record_type: str, operation: str) -> Verdict | None:
    """The file's verdict for this write: its operation's, else the type's, else none."""
    return _verdicts.get((record_type, operation)) or _verdicts.get((record_type, ""))


class VerdictAdapter(SandboxAdapter):
    """The sandbox source, answering as the verdicts file says where it says anything."""

    name = ADAPTER_NAME

    def create(self, write: OutboundWrite) -> Outcome:
        return self._from_file(write) or super().create(write)

    def update(self, write: OutboundWrite) -> Outcome:
        return self._from_file(write) or super().update(write)

    def delete(self, write: OutboundWrite) -> Outcome:
        return self._from_file(write) or super().delete(write)

    def _from_file(self, write: OutboundWrite) -> Outcome | None:
        verdict = verdict_for(write.record_type.name, write.operation)
        if verdict is None:
            return None
        if verdict.kind == "unavailable":
            key = (write.record_type.name, write.operation)
            _failed[key] = _failed.get(key, 0) + 1
            if _failed[key] <= verdict.failures:  # then answered as the sandbox answers
                return transient(f"{self.source_name} is temporarily unavailable (HTTP 503)")
            return None
        if verdict.kind == "refuse":
            return refused(verdict.code, verdict.field or None, verdict.message)
        if verdict.kind == "confirm" and verdict.external_id:
            return confirmed(verdict.external_id)
        return None  # "confirm" without an id: minted as the sandbox mints ("never" is not sent)


adapter_register(ADAPTER_NAME, VerdictAdapter)


def verdicts_use(verdicts: dict[tuple[str, str], Verdict]) -> None:
    """From now on the sources answer ``verdicts`` (the fixtures were confirmed before)."""
    _verdicts.clear()
    _failed.clear()
    _verdicts.update(verdicts)


@contextmanager
def sources_answered_locally() -> Iterator[None]:
    """Inside: the catalog's every source is a ``VerdictAdapter`` (no verdicts until
    ``verdicts_use``: it answers as the sandbox does)."""
    raw = json.loads(Path(settings.TURBOBASE_CATALOG).read_text(encoding="utf-8"))
    raw["sources"] = {name: {"adapter": ADAPTER_NAME} for name in raw.get("sources", {})}
    with tempfile.TemporaryDirectory(prefix="turbobase-local-") as folder:
        catalog = Path(folder) / "catalog.json"
        catalog.write_text(json.dumps(raw), encoding="utf-8")
        _verdicts.clear()
        try:
            # No retry is waited for inside a drain: each goes back to the loop, which jumps the
            # clock to it (a 1 s backoff is waited for in real time on an instance).
            with override_settings(TURBOBASE_CATALOG=str(catalog), SOURCES_INLINE_RETRY_SECONDS=0):
                catalog_reset()
                yield
        finally:
            _verdicts.clear()
            catalog_reset()


def record_types_never_answered() -> set[str]:
    """The types whose writes the source never answers: their queue is never drained."""
    return {rt for (rt, operation), v in _verdicts.items() if v.kind == "never"}
