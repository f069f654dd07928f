"""``turbobase ext new``: scaffold a process or a hook in the project's folder, ready to deploy.

Offline: it writes a file and needs no TURBOBASE_URL.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from extensions.project import CONFIG_NAME
from extensions.typecheck import DECLARATIONS_NAME
from turbobase.cli.base import CliError, emit
from turbobase.cli.client import Client
from turbobase.cli.ext_process_test import process_test_write
from turbobase.cli.project import project_find


def _kebab(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).replace("_", "-").lower()


def process_scaffold(*, record: str, then: str | None, on_failure: str, process_id: str) -> str:
    """A process that deploys as written: the first ``id:`` literal is the process's own id."""
    first = _kebab(record)
    steps = [
        "    {",
        f"      id: '{first}',",
        f"      recordType: '{record}',",
    ]
    if then:
        steps.append(
            "      awaitSource: true,  // the next step reads the id the source mints for this one"
        )
    steps += [
        "      // A transaction create sends its lines in the same write (ATOMIC_WRITE_REQUIRED).",
        "      build: (ctx) => ({ parent: { entity_id: ctx.input.entityId }, lines: ctx.input.lines }),",
        "    },",
    ]
    if then:
        second = _kebab(then)
        steps += [
            "    {",
            f"      id: '{second}',",
            f"      recordType: '{then}',",
            "      // Raised from the first record, so the source copies its lines.",
            f"      build: (ctx) => ({{ parent: {{ created_from_id: ctx.steps['{first}']?.externalId, "
            "entity_id: ctx.input.entityId } }),",
            "    },",
        ]
    return "\n".join(
        [
            # The declarations `turbobase ext types` writes: an editor completes field names.
            f'/// <reference path="./{DECLARATIONS_NAME}" />',
            "import { defineProcess } from '@turbobase/extensions';",
            "",
            "export default defineProcess({",
            "  // Keep this the FIRST `id:` literal in the file: the store keys the module on it.",
            f"  id: '{process_id}',",
            "  input: {",
            "    type: 'object',",
            "    properties: {",
            "      entityId: { type: 'string' },",
            "      lines: { type: 'array', items: { type: 'object' }, minItems: 1 },",
            "    },",
            "    required: ['entityId', 'lines'],",
            "  },",
            "  steps: [",
            *steps,
            "  ],",
            f"  onFailure: '{on_failure}',",
            "});",
            "",
        ]
    )


def new_file_target(folder: str | None, name: str, *, default_folder: str) -> Path:
    """Where ``ext new`` writes: the project's folder, never inside a Python package.

    A folder holding ``__init__.py`` is server code (the instance's own ``processes/`` app when
    the CLI runs in its source tree), not an extension project: writing there would mix a user's
    extension into the server's packages.
    """
    if folder:
        directory = Path(folder)
    else:
        root = project_find()
        directory = Path(os.path.relpath(root / default_folder)) if root else Path(default_folder)
    for candidate in (directory.resolve(), *directory.resolve().parents):
        if (candidate / "__init__.py").is_file():
            raise CliError(
                f"{directory} is inside the Python package {candidate}: extensions live in a project "
                f"folder of their own (one with {CONFIG_NAME}, e.g. demo/ in the server's source tree)",
                exit_code=2,
            )
        if (candidate / CONFIG_NAME).is_file():
            break
    return directory / name


def ext_new_process(args: argparse.Namespace, client: Client) -> int:
    name = _kebab(args.record) + (f"-then-{_kebab(args.then)}" if args.then else "")
    target = new_file_target(args.dir, f"{name}.ts", default_folder="processes")
    if target.exists() and not args.force:
        raise CliError(f"{target} already exists (use --force to overwrite it)")
    target.parent.mkdir(parents=True, exist_ok=True)
    process_id = f"{args.scope}:{name}"
    target.write_text(
        process_scaffold(
            record=args.record, then=args.then, on_failure=args.on_failure, process_id=process_id
        ),
        encoding="utf-8",
    )
    steps = [_kebab(args.record), *([_kebab(args.then)] if args.then else [])]
    test_file = process_test_write(target, steps=steps, force=args.force)
    also = f" and {test_file.as_posix()}" if test_file else ""
    emit(
        args,
        {
            "file": target.as_posix(),
            "id": process_id,
            "testFile": test_file and test_file.as_posix(),
        },
        f"wrote {target.as_posix()} ({process_id}){also}",
    )
    return 0


def hook_scaffold(*, record: str, field: str, hook_id: str) -> str:
    """A hook that deploys as written and refuses a ``record`` write whose ``field`` is empty."""
    return "\n".join(
        [
            "import { defineHook } from '@turbobase/extensions';",
            "",
            "export default defineHook({",
            "  // Keep this the FIRST `id:` literal in the file: the store keys the module on it.",
            f"  id: '{hook_id}',",
            f"  recordType: '{record}',",
            "  on: 'before_save',",
            "  run(ctx) {",
            f"    const value = ctx.record.parent['{field}'];",
            "    if (value === undefined || value === null || value === '') {",
            f"      return {{ reject: {{ code: '{field.upper()}_REQUIRED', field: 'parent.{field}', "
            f"message: 'a {field} is required on every {record}' }} }};",
            "    }",
            "  },",
            "});",
            "",
        ]
    )


def ext_new_hook(args: argparse.Namespace, client: Client) -> int:
    for option, value in (("--record", args.record), ("--require", args.require)):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise CliError(
                f"{option} must be a field or record type name (letters, digits, _): {value!r}",
                exit_code=2,
            )
    name = f"require-{_kebab(args.require)}"
    target = new_file_target(args.dir, f"{name}.ts", default_folder="hooks")
    if target.exists() and not args.force:
        raise CliError(f"{target} already exists (use --force to overwrite it)")
    target.parent.mkdir(parents=True, exist_ok=True)
    hook_id = f"{args.scope}:{name}"
    target.write_text(
        hook_scaffold(record=args.record, field=args.require, hook_id=hook_id), encoding="utf-8"
    )
    emit(args, {"file": target.as_posix(), "id": hook_id}, f"wrote {target.as_posix()} ({hook_id})")
    return 0
