"""Test a process on a laptop, with time skipped: ``run_process`` (docs/testing-processes.md).

    from turbobase.testing import run_process

    def test_trial_ends_unpaid(db):
        result = run_process("processes/trial-to-paid.ts", input={"customer": "c-1", "trial": "30d"},
                             fixtures={"tasks": {"check-in": {"output": {"called": True}}}})
        assert result.state == "committed"
        assert [line.step for line in result.ledger] == ["welcome", "trial", "paid", "check-in", "outcome"]

Inside a configured Django (pytest-django: ask for ``db``) the run uses that database; in a bare
Python process it first configures Django itself on a fresh in-memory SQLite database with the
project's migrations. Either way it is the real deploy, sandbox, boundary and engine, the clock
virtual (``processes.local_test``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from processes.local_test.result import LocalRun

# A named in-memory database, shared by this process's connections (the lease heartbeat's thread
# too) and gone when the process ends.
MEMORY_DATABASE = "file:turbobase-local-test?mode=memory&cache=shared"


def local_django_setup() -> bool:
    """Configure Django on a fresh in-memory database and migrate it, unless Django is set up
    already (then its database is used). Answers whether it set Django up."""
    from django.apps import apps

    if apps.ready:
        return False
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "turbobase.settings")
    import django
    from django.conf import settings

    settings.DATABASES["default"] = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": MEMORY_DATABASE,
        "OPTIONS": {"timeout": 20},
        "ATOMIC_REQUESTS": False,
    }
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    return True


def project_hooks(process_file: Path) -> tuple[tuple[str, dict[str, str]], ...]:
    """The hooks of the project the process file is in (``hooks/`` beside ``processes/``)."""
    from extensions.project import CONFIG_NAME, extension_files, module_entries

    folder = process_file.absolute().parent  # a symlinked process belongs to the project it is in
    root = next(
        (p for p in (folder, *folder.parents) if (p / CONFIG_NAME).is_file()), folder.parent
    )
    hooks = root / "hooks"
    return tuple(
        extension_files(path) for path in module_entries(root) if path.is_relative_to(hooks)
    )


def run_process(
    path: str | Path,
    *,
    input: Any = None,  # noqa: A002 - the name the CLI and the docs use
    fixtures: Any = None,
    events: Any = None,
    verdicts: Any = None,
    as_user: str = "tester",
) -> LocalRun:
    """Run the process in ``path`` end to end with time skipped; answers its ``LocalRun``
    (``state``, ``committed``, ``ledger``, ``records``, ``held_deletes``, ``as_dict()``).

    ``fixtures``, ``events`` and ``verdicts`` are the files' contents or their paths (see
    ``processes.local_test.files`` for their shapes); ``as_user`` is whom the run is invoked as
    (row-level access, ownership). A file that does not fit raises ``LocalTestFileInvalid``."""
    local_django_setup()
    from extensions.project import extension_files
    from processes.local_test.files import events_read, fixtures_read, verdicts_read
    from processes.local_test.run import LocalTest, local_process_run

    entry, files = extension_files(path)
    test = LocalTest(
        entry=entry,
        files=files,
        body={} if input is None else input,
        as_user=as_user,
        hooks=project_hooks(Path(path)),
        fixtures=fixtures_read(fixtures),
        events=events_read(events),
        verdicts=verdicts_read(verdicts),
    )
    return local_process_run(test)
