"""``turbobase ext …``: scaffold, lint, test, deploy, plan and remove extensions.

``new``, ``lint`` and ``test`` are offline: they fold, transpile and evaluate the author's files on
this machine (in the same sandbox child the instance uses) and need no TURBOBASE_URL. ``deploy``,
``plan`` and ``remove`` talk to the instance named by TURBOBASE_URL with TURBOBASE_TOKEN.

An extension's files are the file named and every ``.ts``/``.js`` file below its directory, keyed
``<directory name>/<path>`` (``processes/po.ts``, ``processes/shared-rule.ts``): the instance folds
in the siblings the entry imports and refuses any import outside that directory.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from extensions.project import (
    CONFIG_NAME,
    declared_ids,
    extension_files,
    project_bundle,
    text_read,
)
from turbobase.cli.base import CliError, emit
from turbobase.cli.client import Client
from turbobase.cli.ext_process_test import (
    is_process_file,
    missing_test_warning,
    process_test,
    process_test_arguments,
    process_test_write,
    sample_missing,
)
from turbobase.cli.project import project_find

NO_RUN = "extension default export has no run() function"


def register(subparsers: argparse._SubParsersAction) -> None:
    ext = subparsers.add_parser("ext", help="extensions: new, lint, test, deploy, plan, remove")
    ext.set_defaults(group_parser=ext)
    verbs = ext.add_subparsers(dest="ext_command", metavar="VERB")

    new = verbs.add_parser("new", help="scaffold an extension file")
    new_kinds = new.add_subparsers(dest="ext_kind", metavar="KIND")
    process = new_kinds.add_parser(
        "process", help="a process: a record, optionally then another from it"
    )
    process.add_argument(
        "--record", required=True, metavar="RECORD_TYPE", help="the first step's record type"
    )
    process.add_argument(
        "--then", metavar="RECORD_TYPE", help="a second record raised from the first"
    )
    process.add_argument("--on-failure", choices=("stop", "rollback"), default="stop")
    process.add_argument(
        "--scope", default="app", help="the id's scope: <scope>:<name> (default: app)"
    )
    process.add_argument(
        "--dir",
        help="where to write it (default: processes/ of the project the working "
        "directory is in, found by its turbobase.config.json; else ./processes)",
    )
    process.add_argument("--force", action="store_true", help="overwrite an existing file")
    process.set_defaults(handler=ext_new_process)
    hook = new_kinds.add_parser(
        "hook", help="a before_save hook that refuses a write missing a field"
    )
    hook.add_argument(
        "--record", required=True, metavar="RECORD_TYPE", help="the record type it guards"
    )
    hook.add_argument(
        "--require", required=True, metavar="FIELD", help="the parent field it requires"
    )
    hook.add_argument(
        "--scope", default="app", help="the id's scope: <scope>:<name> (default: app)"
    )
    hook.add_argument(
        "--dir", help="where to write it (default: hooks/ of the project, as for process)"
    )
    hook.add_argument("--force", action="store_true", help="overwrite an existing file")
    hook.set_defaults(handler=ext_new_hook)

    lint = verbs.add_parser(
        "lint", help="offline checks (the id-literal trap); exits 1 on an error"
    )
    lint.add_argument("files", nargs="+", metavar="FILE")
    lint.add_argument("--ci", action="store_true", help="exit non-zero on a warning too")
    lint.set_defaults(handler=ext_lint)

    test = verbs.add_parser(
        "test",
        help="run a hook's run() on a sample, or a process end to end with time skipped, here",
    )
    test.add_argument("file", metavar="FILE")
    test.add_argument(
        "--sample",
        metavar="JSON",
        help="a hook: a record ({parent, lines?}), a list of them, or @file.json",
    )
    process_test_arguments(test)
    test.set_defaults(handler=ext_test)

    deploy = verbs.add_parser(
        "deploy",
        help="deploy each FILE (with its sibling files) to the instance, "
        "or with --to ENV the whole project as one plan",
    )
    deploy.add_argument("files", nargs="*", metavar="FILE")
    deploy.add_argument(
        "--to",
        metavar="ENV",
        help="deploy the project (processes/, hooks/, "
        "turbobase/schedules.json) to ENV from turbobase.config.json, all or nothing",
    )
    deploy.add_argument(
        "--remove",
        action="append",
        default=[],
        metavar="ID",
        help="with --to: also remove this deployed extension in the same plan (repeatable)",
    )
    deploy.set_defaults(handler=ext_deploy)

    plan = verbs.add_parser(
        "plan",
        help="list what is deployed that processes/ and hooks/ do not declare; "
        "with --to ENV, everything a deploy there would change",
    )
    plan.add_argument("--to", metavar="ENV", help="an environment from turbobase.config.json")
    plan.add_argument(
        "--remove",
        action="append",
        default=[],
        metavar="ID",
        help="with --to: plan removing this deployed extension too (repeatable)",
    )
    plan.set_defaults(handler=ext_plan)

    remove = verbs.add_parser("remove", help="stop serving one deployed extension")
    remove.add_argument("id")
    remove.set_defaults(handler=ext_remove)


# --- files ---------------------------------------------------------------------------------


# --- new -----------------------------------------------------------------------------------


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


def _project_or_cwd() -> Path:
    """The project the working directory is in (nearest ``turbobase.config.json``), else itself."""
    return project_find() or Path.cwd().resolve()


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


# --- lint and test (offline) ---------------------------------------------------------------


def _offline_failure(path: str, exc: Exception) -> str:
    field = getattr(exc, "field", None)
    code = getattr(exc, "code", None)
    head = f"{path}: " + (f"{code}: " if code else "")
    return head + (f"{exc} [{field}]" if field and field not in str(exc) else str(exc))


def ext_lint(args: argparse.Namespace, client: Client) -> int:
    from extensions.lint import BundleInvalid, lint_check
    from extensions.sandbox import SandboxError
    from extensions.siblings import SiblingImportRefused
    from extensions.transpile import TranspileError

    failed = warned = False
    results = []
    for path in args.files:
        entry, files = extension_files(path)
        try:
            report = lint_check(entry=entry, files=files)
        except (BundleInvalid, SiblingImportRefused, TranspileError, SandboxError) as exc:
            failed = True
            print(f"error {_offline_failure(path, exc)}", file=sys.stderr)
            results.append({"file": path, "error": str(exc)})
            continue
        warnings = [*report.warnings, *missing_test_warning(path, report.kind)]
        for warning in warnings:
            warned = True
            print(f"warning {path}: {warning.rule}: {warning.message}")
        if report.kind is None and not args.json:
            print(f"skipped {path}: no defineProcess/defineHook default export (a sibling module)")
        elif not warnings and not args.json:
            print(f"ok {path} ({report.kind} {report.defined_id})")
        results.append(
            {
                "file": path,
                "kind": report.kind,
                "id": report.defined_id,
                "warnings": [w.as_dict() for w in warnings],
            }
        )
    if args.json:
        emit(args, results, "")
    return 1 if failed or (warned and args.ci) else 0


def _samples(raw: str) -> list[Any]:
    text = text_read(Path(raw[1:])) if raw.startswith("@") else raw
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CliError(f"--sample is not JSON: {exc}") from exc
    except RecursionError:  # nested past what Python's json reads: named, not a traceback
        raise CliError("--sample is nested too deeply to read") from None
    return value if isinstance(value, list) else [value]


def _hook_context(definition: dict, sample: Any) -> dict[str, Any]:
    sample = sample if isinstance(sample, dict) else {}
    if isinstance(sample.get("record"), dict):  # a whole hook context
        return {
            "slot": definition.get("on"),
            "recordType": definition.get("recordType"),
            "operation": "create",
            "changes": sample["record"].get("parent") or {},
            **sample,
        }
    parent = sample.get("parent") if isinstance(sample.get("parent"), dict) else sample
    return {
        "slot": definition.get("on"),
        "recordType": definition.get("recordType"),
        "operation": "create",
        "record": {
            "pgRowId": None,
            "externalId": None,
            "parent": parent,
            "lines": sample.get("lines") or [],
        },
        "changes": parent,
    }


def _verdict_line(result: Any) -> tuple[str, dict[str, Any]]:
    reject = result.get("reject") if isinstance(result, dict) else None
    if reject is None:
        return "passed", {"outcome": "passed"}
    if not isinstance(reject, dict) or not isinstance(reject.get("code"), str):
        return "failed: the rejection has no code", {
            "outcome": "failed",
            "error": "rejection without a code",
        }
    field = f" ({reject['field']})" if reject.get("field") else ""
    return (
        f"rejected {reject['code']}{field}: {reject.get('message', '')}",
        {"outcome": "rejected", "rejection": reject},
    )


def ext_test(args: argparse.Namespace, client: Client) -> int:
    from extensions.lint import LINT_LIMITS, BundleInvalid, bundle_compile, bundle_load
    from extensions.sandbox import Sandbox, SandboxError
    from extensions.siblings import SiblingImportRefused
    from extensions.transpile import TranspileError

    if args.sample is None and is_process_file(args.file):
        return process_test(args)
    if args.sample is None:
        raise sample_missing(args.file)
    samples = _samples(args.sample)
    entry, files = extension_files(args.file)
    results: list[dict[str, Any]] = []
    lines: list[str] = []
    try:
        bundle = bundle_compile(entry=entry, files=files)
        with Sandbox(limits=LINT_LIMITS) as sandbox:
            loaded = bundle_load(sandbox, bundle)
            definition = loaded.definition if isinstance(loaded.definition, dict) else {}
            run = definition.get("run")
            for sample in samples:
                if loaded.kind != "hook" or not (isinstance(run, dict) and run.get("$fn")):
                    lines.append(f"failed: {NO_RUN}")
                    results.append({"outcome": "failed", "error": NO_RUN})
                    continue
                sandbox.new_run()
                try:
                    result = sandbox.call(["run"], [], ctx=_hook_context(definition, sample))
                except SandboxError as exc:
                    lines.append(f"failed: {exc.code}: {exc}")
                    results.append({"outcome": "failed", "error": str(exc), "code": exc.code})
                    continue
                line, data = _verdict_line(result)
                lines.append(line)
                results.append(data)
    except (BundleInvalid, SiblingImportRefused, TranspileError, SandboxError) as exc:
        raise CliError(f"error {_offline_failure(args.file, exc)}") from exc
    emit(args, results, "\n".join(lines))
    return 1 if any(r["outcome"] == "failed" for r in results) else 0


# --- deploy, plan, remove (online) ---------------------------------------------------------


def ext_deploy(args: argparse.Namespace, client: Client) -> int:
    if args.to:
        if args.files:
            raise CliError("--to deploys the whole project; name no FILE with it", exit_code=2)
        return bundle_deploy(args)
    if args.remove:
        raise CliError("--remove goes with --to (or use: turbobase ext remove ID)", exit_code=2)
    if not args.files:
        raise CliError("name the FILE(s) to deploy, or --to ENV for the whole project", exit_code=2)
    deployed = []
    for path in args.files:
        entry, files = extension_files(path)
        body = client.post("/v1/extensions", {"entry": entry, "files": files})
        deployed.append(body)
        how = "new" if body.get("outcome") == "written" else "replaced existing"
        if not args.json:
            print(f"deployed {body.get('id')} → status={body.get('status')} ({how})")
    if args.json:
        emit(args, deployed, "")
    return 0


def ext_plan(args: argparse.Namespace, client: Client) -> int:
    if args.to:
        return bundle_plan(args)
    if args.remove:
        raise CliError("--remove goes with --to", exit_code=2)
    body = client.get("/v1/extensions")
    active = [e for e in body.get("extensions", []) if e.get("status") == "active"]
    declared = declared_ids(_project_or_cwd())
    stray = [e for e in active if e["id"] not in declared]
    missing = sorted(set(declared) - {e["id"] for e in active})
    lines = [
        f"undeclared {e['id']} ({e['kind']} v{e['version']}) — remove it with: "
        f"turbobase ext remove {e['id']}"
        for e in stray
    ]
    lines += [f"not deployed {i} ({declared[i]})" for i in missing]
    if not stray:
        lines.insert(0, "nothing is deployed that the project does not declare")
    emit(args, {"undeclared": [e["id"] for e in stray], "notDeployed": missing}, "\n".join(lines))
    return 0


def ext_remove(args: argparse.Namespace, client: Client) -> int:
    body = client.delete(f"/v1/extensions/{quote(args.id, safe=':')}")
    emit(args, body, f"removed {body.get('id')} → status={body.get('status')}")
    return 0


# --- the whole project to one environment (--to) -------------------------------------------


def _bundle_target(args: argparse.Namespace) -> tuple[Any, Client, dict[str, Any]]:
    from turbobase.cli.project import environment_get, project_root

    root = project_root()
    environment = environment_get(root, args.to)
    body = project_bundle(root)
    if args.remove:
        body["removes"] = list(args.remove)
    return environment, environment.client(), body


def plan_lines(plan: dict[str, Any]) -> list[str]:
    """A person's reading of ``/v1/extensions/bundle/plan``."""
    lines = [
        f"{m['change']} {m['id']} ({m['kind']}, {m['entry']})" for m in plan.get("modules", [])
    ]
    for item in plan.get("schedules", []):
        lines.append(
            f"{item['change']} schedule {item['name']} → {item['process']} "
            f"({item['cron']} {item['tz']})"
        )
    for item in plan.get("removes", []):
        alongside = ", ".join(
            a.replace("schedules:", "schedule ") for a in item.get("alongside", [])
        )
        lines.append(
            f"removed {item['id']} ({item['kind']})" + (f" with {alongside}" if alongside else "")
        )
    for item in plan.get("undeclared", []):
        lines.append(
            f"undeclared {item['id']} ({item['kind']} v{item['version']}) — deployed, not in this "
            f"project; remove it with: turbobase ext remove {item['id']}"
        )
    return lines


def bundle_plan(args: argparse.Namespace) -> int:
    environment, client, body = _bundle_target(args)
    plan = client.post("/v1/extensions/bundle/plan", body)
    lines = [f"plan for {environment.name} ({environment.url}):", *plan_lines(plan)]
    emit(args, plan, "\n".join(lines))
    return 0


def bundle_deploy(args: argparse.Namespace) -> int:
    environment, client, body = _bundle_target(args)
    applied = client.post("/v1/extensions/bundle/apply", body)
    how = {"written": "new", "duplicate": "replaced existing", "unchanged": "unchanged"}
    lines = [
        f"deployed {m['id']} → status={m['status']} ({how.get(m['outcome'], m['outcome'])})"
        for m in applied.get("modules", [])
    ]
    lines += [f"schedule {s['name']} → {s['change']}" for s in applied.get("schedules", [])]
    lines += [f"removed {m['id']} → status={m['status']}" for m in applied.get("removed", [])]
    lines += [
        f"undeclared {m['id']} ({m['kind']} v{m['version']}) — left deployed; remove it with: "
        f"turbobase ext remove {m['id']}"
        for m in applied.get("undeclared", [])
    ]
    lines.append(f"applied to {environment.name} ({environment.url})")
    emit(args, applied, "\n".join(lines))
    return 0
