"""The purge's archive: each purged run, before it is deleted, as one JSON line appended to a gzip
file per day (``runs-YYYY-MM-DD.jsonl.gz``, the purge's UTC day) in the deployment's
``TURBOBASE_HISTORY_ARCHIVE_DIR``.

Each batch is appended as one gzip member (a gzip file of several members reads as one: ``gunzip``,
``zcat``, Python's ``gzip``), flushed and fsynced before the batch's rows are deleted. A batch
whose delete then fails is archived again by the next purge: a run may appear twice in the
archive, never not at all.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

from kernel.deployment import history_archive_dir
from processes.history.errors import ArchiveUnwritable


def archive_dir() -> Path | None:
    return history_archive_dir()


def archive_path(directory: Path, now: datetime) -> Path:
    return directory / f"runs-{now:%Y-%m-%d}.jsonl.gz"


def archive_check(directory: Path) -> None:
    """Refuse (``ArchiveUnwritable``, saying why) a directory the purge could not write, before
    anything is deleted: it must exist, be a directory, and take a file."""
    if not directory.is_dir():
        raise ArchiveUnwritable(
            f"the archive directory {directory} (TURBOBASE_HISTORY_ARCHIVE_DIR) does not exist "
            "or is not a directory; nothing was purged",
            archiveDir=str(directory),
        )
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".probe-", delete=True):
            pass
    except OSError as exc:
        raise ArchiveUnwritable(
            f"the archive directory {directory} (TURBOBASE_HISTORY_ARCHIVE_DIR) cannot be "
            f"written: {exc.strerror or exc}; nothing was purged",
            archiveDir=str(directory),
        ) from exc


def archive_append(path: Path, lines: list[dict[str, Any]]) -> None:
    """Append ``lines`` (one purged run each) as one gzip member, on disk before this returns."""
    data = "".join(json.dumps(line, cls=DjangoJSONEncoder) + "\n" for line in lines)
    try:
        with open(path, "ab") as raw:
            with gzip.GzipFile(fileobj=raw, mode="ab") as zipped:
                zipped.write(data.encode())
            raw.flush()
            os.fsync(raw.fileno())
    except OSError as exc:
        raise ArchiveUnwritable(
            f"the archive {path} could not be written: {exc.strerror or exc}; the runs not yet "
            "archived were not purged",
            archiveDir=str(path.parent),
        ) from exc
