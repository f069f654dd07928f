"""A fresh instance for the walkthrough: ``tb_prepare`` + ``tb_demo`` + ``tb_run`` at a free port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.turbobase.live import (
    Instance,
    instance_running,
)


@pytest.fixture
def fresh(tmp_path_factory) -> Iterator[Instance]:
    """A new instance on a database of its own (PostgreSQL when the suite runs on it)."""
    with instance_running(tmp_path_factory.mktemp("fresh"), "tb_fresh") as instance:
        yield instance
