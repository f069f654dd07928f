"""One local run, from the author's files to its report (``turbobase.testing.run_process``).

In order: the users; the project's hooks and the process deployed through the real deploy path;
the fixture records written through the boundary as the ``--as`` user and confirmed by the
(local) source; the verdicts file put in force; the process invoked as that user, exactly as an
app invokes it (its input checked against its schema); the run driven to its end on the virtual
clock (``driver``); the report read from the ledger.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User

from extensions.deploy import extension_deploy
from extensions.models import ExtensionModule
from extensions.store import store_forget
from guardrails.settings import settings_patch
from kernel.errors import Refusal, TurbobaseError
from processes.errors import LocalTestFileInvalid
from processes.invoke import run_invoke
from processes.local_test.clock import VirtualClock, clock_installed
from processes.local_test.driver import (
    LocalDriver,
    commit_hooks_run,
    outbound_drain_all,
    users_ensure,
)
from processes.local_test.files import Fixtures, ScriptedEvent, Verdict
from processes.local_test.result import LocalRun, local_run_read
from processes.local_test.verdicts import (
    record_types_never_answered,
    sources_answered_locally,
    verdicts_use,
)
from records.boundary import record_create
from records.trail import Actor

DEPLOYER = "local-test-deployer"


@dataclass(frozen=True)
class LocalTest:
    """Everything one local run is given, already read and checked (``files``)."""

    entry: str
    files: dict[str, str]
    body: Any
    as_user: str
    hooks: tuple[tuple[str, dict[str, str]], ...] = ()
    fixtures: Fixtures = field(default_factory=Fixtures)
    events: tuple[ScriptedEvent, ...] = ()
    verdicts: dict[tuple[str, str], Verdict] = field(default_factory=dict)


def _people(test: LocalTest) -> User:
    """Every user the files name exists; answers the ``--as`` user."""
    names: dict[str, dict[str, Any]] = {test.as_user: {}, DEPLOYER: {"admin": True}}
    names.update({e.sender: {} for e in test.events if e.sender})
    names.update({a.by: {} for a in test.fixtures.tasks.values() if a.by})
    names.update({r.owner: {} for r in test.fixtures.records if r.owner})
    names.update(test.fixtures.users)
    return users_ensure(names)[test.as_user]


def _settings_write(test: LocalTest, by: User) -> None:
    """The fixtures' instance settings, checked and stored as ``PATCH /v1/settings`` does."""
    for key, value in test.fixtures.settings.items():
        try:
            settings_patch({key: value}, by=by)
        except TurbobaseError as exc:
            raise LocalTestFileInvalid(
                f"fixtures.settings.{key}: {exc.message}", field=f"fixtures.settings.{key}"
            ) from None


def _fixtures_write(test: LocalTest, user: User) -> None:
    """The records that exist before the run, through the boundary, each as its ``as`` user
    (its owner, for row-level access), else as the ``--as`` user."""
    for n, record in enumerate(test.fixtures.records):
        writer = User.objects.get(username=record.owner) if record.owner else user
        where = f"fixtures.records.{record.record_type}"
        try:
            with commit_hooks_run():
                record_create(
                    actor=Actor(user=writer),
                    record_type=record.record_type,
                    parent=record.parent,
                    lines=record.lines,
                )
        except Refusal as exc:  # the boundary's own check (a hook, a required field): named
            field_name = f"{where}.{exc.field}" if exc.field else where
            raise LocalTestFileInvalid(
                f"{field_name}: {record.record_type} #{n + 1} refused: {exc.message}",
                field=field_name,
            ) from None
    outbound_drain_all(never=set())


def local_process_run(test: LocalTest) -> LocalRun:
    """Deploy, seed, invoke and drive one run on a virtual clock; answers its report."""
    clock = VirtualClock()
    with clock_installed(clock), sources_answered_locally():
        store_forget()  # another local run's module of the same id and version is not this one
        user = _people(test)
        deployer = User.objects.get(username=DEPLOYER)
        for entry, files in test.hooks:
            extension_deploy(entry=entry, files=files, by=deployer)
        deployed = extension_deploy(entry=test.entry, files=test.files, by=deployer)
        _settings_write(test, deployer)
        _fixtures_write(test, user)
        verdicts_use(test.verdicts)
        started = time.monotonic()  # the run's own wall time, from its invoke (not the setup)
        run_start = clock.now()
        with commit_hooks_run():
            run = run_invoke(process_id=deployed.id, body=test.body, user=user)
        driver = LocalDriver(
            clock=clock,
            user=user,
            events=test.events,
            tasks=test.fixtures.tasks,
            never=record_types_never_answered(),
        )
        driver.drive(run.pk)
        run.refresh_from_db()
        definition = ExtensionModule.objects.get(pk=deployed.id).definition
        result = local_run_read(run, definition if isinstance(definition, dict) else {})
    result.virtual_seconds = (clock.now() - run_start).total_seconds()
    result.wall_seconds = time.monotonic() - started
    return result
