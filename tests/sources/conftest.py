"""Fixtures of the sources tests: fast retries, a drain helper, real worker processes, HTTP catalogs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from records.catalog import catalog_reset
from sources.outbound import DrainReport, outbound_drain
from tests.workers import QCluster


@pytest.fixture(autouse=True)
def _fast_retries(settings):
    # Backoffs of tens of milliseconds are waited for inside one drain, so unit tests stay quick.
    settings.SOURCES_RETRY_BASE_SECONDS = 0.02
    settings.SOURCES_RETRY_CAP_SECONDS = 0.2
    settings.SOURCES_INLINE_RETRY_SECONDS = 2.0


def drain(record_type: str) -> DrainReport:
    """Run one drain in this process (what a worker's task does)."""
    return outbound_drain(record_type=record_type)


@pytest.fixture
def qcluster(transactional_db, tmp_path):
    """Two real ``manage.py qcluster`` workers on the test database, stopped after the test."""
    cluster = QCluster(workers=2, log_path=tmp_path / "qcluster.log")
    cluster.start()
    yield cluster
    cluster.stop()


def write_catalog(path: Path, *, sources: dict, types: dict) -> Path:
    path.write_text(json.dumps({"sources": sources, "types": types}))
    return path


@pytest.fixture
def use_catalog(settings, tmp_path):
    """Serve a catalog written for the test: ``use_catalog(sources={...}, types={...})``."""

    def _use(*, sources: dict, types: dict) -> Path:
        path = write_catalog(tmp_path / "catalog.json", sources=sources, types=types)
        settings.TURBOBASE_CATALOG = str(path)
        catalog_reset()
        return path

    yield _use
    catalog_reset()
