"""``turbobase ext lint`` and ``ext test``: offline checks of an extension's files on this machine.

They fold, transpile and evaluate the author's files in the same sandbox child the instance uses
and need no TURBOBASE_URL.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from extensions.project import extension_files, text_read
from extensions.typecheck import DECLARATIONS_NAME
from turbobase.cli.base import CliError, emit
from turbobase.cli.client import Client
from turbobase.cli.ext_process_test import (
    is_process_file,
    missing_test_warning,
    process_test,
    sample_missing,
)

NO_RUN = "extension default export has no run() function"


def _offline_failure(path: str, exc: Exception) -> str:
    field = getattr(exc, "field", None)
    code = getattr(exc, "code", None)
    head = f"{path}: " + (f"{code}: " if code else "")
    return head + (f"{exc} [{field}]" if field and field not in str(exc) else str(exc))


def ext_lint(args: argparse.Namespace, client: Client) -> int:
    failed = warned = False
    results = []
    for path in args.files:
        result = _lint_one(path, quiet=args.json)
        failed = failed or "error" in result or bool(result.get("typeErrors"))
        warned = warned or bool(result.get("warnings"))
        results.append(result)
    if args.json:
        emit(args, results, "")
    return 1 if failed or (warned and args.ci) else 0


def _lint_one(path: str, *, quiet: bool) -> dict[str, Any]:
    """One file's lint: the bundle's checks, then (a process) its types against the declarations."""
    from extensions.lint import BundleInvalid, lint_check
    from extensions.sandbox import SandboxError
    from extensions.siblings import SiblingImportRefused
    from extensions.transpile import TranspileError
    from turbobase.cli.ext_types import lint_types

    entry, files = extension_files(path)
    try:
        report = lint_check(entry=entry, files=files)
        problems = lint_types(path, entry, files) if report.kind == "process" else []
    except (BundleInvalid, SiblingImportRefused, TranspileError, SandboxError) as exc:
        print(f"error {_offline_failure(path, exc)}", file=sys.stderr)
        return {"file": path, "error": str(exc)}
    warnings = [*report.warnings, *missing_test_warning(path, report.kind)]
    for problem in problems or []:
        print(f"error {problem}", file=sys.stderr)
    if not quiet:  # --json: the warnings are in the answer, and stdout is the JSON alone
        for warning in warnings:
            print(f"warning {path}: {warning.rule}: {warning.message}")
        if problems is None and DECLARATIONS_NAME in files[entry]:  # it expects them
            print(
                f"untyped {path}: no {DECLARATIONS_NAME} beside it (turbobase ext types writes it)",
                file=sys.stderr,
            )
        if report.kind is None:
            print(f"skipped {path}: no defineProcess/defineHook default export (a sibling module)")
        elif not warnings and not problems:
            print(f"ok {path} ({report.kind} {report.defined_id})")
    return {
        "file": path,
        "kind": report.kind,
        "id": report.defined_id,
        "warnings": [w.as_dict() for w in warnings],
        "typeErrors": [p.as_dict() for p in problems or []],
    }


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
