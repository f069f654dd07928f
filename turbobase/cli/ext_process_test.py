"""``turbobase ext test processes/<file>.ts``: run a process here, end to end, with time skipped.

No instance: ``turbobase.testing.run_process`` configures Django on a fresh in-memory SQLite
database and drives the real engine on a virtual clock (docs/testing-processes.md). Beside the
process, ``<stem>.test.json`` (written by ``turbobase ext new process``) holds the run's input,
fixtures, events and verdicts and what to expect (its final state and each step's id, kind and
outcome); flags given on the command line take the place of the file's.

Exit codes: 0 the run committed (or ended as the test file expects); 1 it did not, or its ledger
is not the one expected (a diff is printed); 2 a file or the input does not fit, nothing ran.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Any

from extensions.project import DEFINES, text_read
from turbobase.cli.base import CliError, emit

TEST_SUFFIX = ".test.json"


def process_test_arguments(test: argparse.ArgumentParser) -> None:
    """The ``ext test`` options that take a process (``--sample`` is a hook's)."""
    test.add_argument("--input", metavar="JSON", help="a process: its input (or @file.json)")
    test.add_argument(
        "--fixtures", metavar="FILE", help="a process: users, settings, records, tasks"
    )
    test.add_argument("--events", metavar="FILE", help="a process: events sent at virtual times")
    test.add_argument(
        "--source-verdicts",
        dest="source_verdicts",
        metavar="FILE",
        help="a process: how the connected systems answer each record type",
    )
    test.add_argument(
        "--as", dest="as_user", metavar="USER", help="a process: whom it runs as (default tester)"
    )
    test.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print the run as JSON"
    )


def is_process_file(path: str) -> bool:
    """Whether ``path`` defines a process (not a hook): ``ext test`` runs it end to end."""
    file = Path(path)
    if not file.is_file():
        return False
    found = DEFINES.search(text_read(file))
    return found is not None and found.group(1) == "Process"


def sample_missing(path: str) -> CliError:
    """``ext test`` on a hook (or on nothing) without ``--sample``: what to do, exit 2."""
    if not Path(path).is_file():
        return CliError(f"{path}: no such file", exit_code=2)
    return CliError(
        f"{path} is not a process: a hook is tested on a sample, give --sample", exit_code=2
    )


def test_file_for(path: str | Path) -> Path:
    """``processes/po.ts`` → ``processes/po.test.json``."""
    file = Path(path)
    return file.with_name(file.stem + TEST_SUFFIX)


MISSING_TEST_RULE = "process-without-test"


def missing_test_warning(path: str, kind: str | None) -> list[Any]:
    """``ext lint``'s warning (never an error) for a process with no ``<stem>.test.json``."""
    from extensions.lint import LintWarning

    if kind != "process" or test_file_for(path).is_file():
        return []
    return [
        LintWarning(
            MISSING_TEST_RULE,
            path,
            f"no {test_file_for(path).name} beside it: `turbobase ext test {path}` runs it "
            "end to end with time skipped and checks the ledger that file expects",
        )
    ]


def _json_option(raw: str, name: str) -> Any:
    text = text_read(Path(raw[1:])) if raw.startswith("@") else raw
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CliError(f"{name} is not JSON: {exc}", exit_code=2) from None


def _test_file(path: str) -> dict[str, Any]:
    file = test_file_for(path)
    if not file.is_file():
        return {}
    data = _json_option("@" + str(file), str(file))
    if not isinstance(data, dict):
        raise CliError(f"{file} must hold a JSON object", exit_code=2)
    return data


def _expected_lines(expect: dict[str, Any]) -> list[str]:
    lines = [f"state: {expect['state']}"] if "state" in expect else []
    for step in expect.get("ledger") or []:
        step = step if isinstance(step, dict) else {}
        lines.append(f"{step.get('step')} {step.get('kind')} {step.get('outcome')}")
    return lines


def expectation_diff(expect: dict[str, Any], result: Any) -> list[str]:
    """A unified diff of what the test file expects against what the run did; empty if equal."""
    wanted = _expected_lines(expect)
    got = [f"state: {result.state}"] if "state" in expect else []
    if "ledger" in expect:
        got += [f"{line.step} {line.kind} {line.outcome}" for line in result.ledger]
    return list(difflib.unified_diff(wanted, got, "expected", "ran", lineterm=""))


def process_test(args: argparse.Namespace) -> int:
    from kernel.errors import InvalidRequest
    from turbobase.testing import run_process

    spec = _test_file(args.file)
    body = _json_option(args.input, "--input") if args.input else spec.get("input", {})
    fixtures = args.fixtures or spec.get("fixtures")
    events = args.events or spec.get("events")
    verdicts = args.source_verdicts or spec.get("verdicts")
    try:
        result = run_process(
            args.file,
            input=body,
            fixtures=fixtures,
            events=events,
            verdicts=verdicts,
            as_user=args.as_user or spec.get("as") or "tester",
        )
    except InvalidRequest as exc:
        field = f" [{exc.field}]" if exc.field and exc.field not in exc.message else ""
        raise CliError(f"{args.file}: {exc.message}{field}", exit_code=2) from None
    expect: dict[str, Any] = spec["expect"] if isinstance(spec.get("expect"), dict) else {}
    diff = expectation_diff(expect, result) if expect else []
    data = {**result.as_dict(), "expected": bool(expect), "matches": not diff}
    checked = f"\n{test_file_for(args.file)}: as expected" if expect and not diff else ""
    emit(args, data, result.table() + checked)
    if diff:
        print(f"{test_file_for(args.file)}: the run is not the one expected", file=sys.stderr)
        print("\n".join(diff), file=sys.stderr)
        return 1
    return 0 if result.committed or (expect.get("state") == result.state) else 1


def process_test_scaffold(*, steps: list[str]) -> dict[str, Any]:
    """The ``<stem>.test.json`` ``ext new process`` writes beside the scaffold: an input its
    schema takes, no fixtures, and the ledger the scaffold's run writes (each step created)."""
    return {
        "input": {"entityId": "E-1", "lines": [{"item": "ITEM-1", "quantity": 1}]},
        "fixtures": {},
        "expect": {
            "state": "committed",
            "ledger": [{"step": s, "kind": "create", "outcome": "confirmed"} for s in steps],
        },
    }


def process_test_write(process_file: Path, *, steps: list[str], force: bool) -> Path | None:
    """Write the test file beside ``process_file`` (not over an author's own without ``force``)."""
    target = test_file_for(process_file)
    if target.exists() and not force:
        return None
    target.write_text(
        json.dumps(process_test_scaffold(steps=steps), indent=2) + "\n", encoding="utf-8"
    )
    return target
