"""A fresh instance for the walkthrough: ``tb_prepare`` + ``tb_demo`` + ``tb_run`` at a free port."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator

import pytest

from tests.turbobase.live import (
    Instance,
    kill_tree,
    postgres_drop,
    postgres_url,
    suite_is_postgres,
    unique_name,
)


@pytest.fixture
def fresh(tmp_path_factory) -> Iterator[Instance]:
    """A new instance on a database of its own (PostgreSQL when the suite runs on it)."""
    tmp = tmp_path_factory.mktemp("fresh")
    postgres = suite_is_postgres()
    url = postgres_url(unique_name("tb_fresh")) if postgres else f"sqlite:///{tmp}/fresh.sqlite3"
    instance = Instance(database_url=url)
    try:
        yield instance.start(tmp)
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            instance.stop()
        kill_tree(instance)
        if postgres:
            postgres_drop(url)
