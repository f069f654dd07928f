"""``turbobase processes …``: list, history, one run, invoke, cancel, resume, roll back, retry,
redirect, redrive.

``invoke`` sends the input — a JSON object from ``--input`` or ``--input-file`` — as the whole
request body, exactly as an app does. Queued, it prints the run id and the ``turbobase logs``
line that follows it; ``--sync`` prints the settled state, anything outstanding and each step,
or — past the instance's budget — that the run is still going and how to watch it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from processes.codes import ProcessError
from turbobase.cli.base import CliError, emit
from turbobase.cli.client import Client

HISTORY_PAGE = 200
# A sync invoke waits on the instance up to its budget (processes.sync_budget_ms, 30 s by
# default); the client must not give up first.
SYNC_TIMEOUT_S = 15 * 60.0


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser(
        "processes",
        help="processes: list, runs, run, invoke, cancel, resume, rollback, retry, redirect, "
        "redrive",
    )
    group.set_defaults(group_parser=group)
    verbs = group.add_subparsers(dest="processes_command", metavar="VERB")

    verbs.add_parser("list", help="what is deployed, how it fires, and its last runs").set_defaults(
        handler=processes_list
    )

    _runs_register(verbs)
    run = verbs.add_parser("run", help="one run and its step ledger")
    run.add_argument("run_id", metavar="RUN_ID")
    run.set_defaults(handler=processes_run)
    _invoke_register(verbs)
    _steering_register(verbs)


def _runs_register(verbs: argparse._SubParsersAction) -> None:
    runs = verbs.add_parser(
        "runs",
        help="runs you can see (an admin's: all), newest first: one process's, or found by "
        "--where/--state",
    )
    runs.add_argument("process_id", metavar="ID", nargs="?", help="only this process's runs")
    runs.add_argument(
        "--where",
        metavar="input.FIELD=VALUE",
        action="append",
        default=[],
        help="runs whose searchable input field held VALUE (repeat: all must hold)",
    )
    runs.add_argument("--state", action="append", default=[], help="only runs in this state")
    runs.set_defaults(handler=processes_runs)


def _invoke_register(verbs: argparse._SubParsersAction) -> None:
    invoke = verbs.add_parser("invoke", help="start a run (queued), or wait for it with --sync")
    invoke.add_argument("process_id", metavar="ID")
    source = invoke.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--input", metavar="JSON", help="the input, a JSON object, sent as the body"
    )
    source.add_argument("--input-file", metavar="FILE", help="a file holding the input JSON object")
    how = invoke.add_mutually_exclusive_group()
    how.add_argument("--sync", action="store_true", help="wait for the run to settle (bounded)")
    how.add_argument(
        "--plan", action="store_true", help="show what a run would write now; write nothing"
    )
    invoke.set_defaults(handler=processes_invoke)


def _steering_register(verbs: argparse._SubParsersAction) -> None:
    for verb, text in (
        ("cancel", "stop a run, queued or running"),
        ("resume", "carry on a run that stopped on a wait"),
        ("rollback", "undo what a finished run created"),
    ):
        steer = verbs.add_parser(verb, help=text)
        steer.add_argument("run_id", metavar="RUN_ID")
        steer.set_defaults(handler=processes_steer, verb=verb)

    retry = verbs.add_parser("retry", help="start a run that ended failed/cancelled/... again")
    retry.add_argument("run_id", metavar="RUN_ID")
    retry.set_defaults(handler=processes_relink, verb="retry")

    redirect = verbs.add_parser("redirect", help="cancel a run and start it with a new input")
    redirect.add_argument("run_id", metavar="RUN_ID")
    new_input = redirect.add_mutually_exclusive_group(required=True)
    new_input.add_argument("--input", metavar="JSON", help="the new input, a JSON object")
    new_input.add_argument("--input-file", metavar="FILE", help="a file holding the new input")
    redirect.set_defaults(handler=processes_relink, verb="redirect")

    redrive = verbs.add_parser(
        "redrive", help="carry a failed run on, as the same run, from the step that failed"
    )
    redrive.add_argument("run_id", metavar="RUN_ID")
    redrive.add_argument(
        "--version",
        choices=("current", "latest"),
        default="current",
        help="the version the failed step and those after it run on: the run's own (default) "
        "or the newest deployed",
    )
    redrive.set_defaults(handler=processes_redrive)


# --- printing ----------------------------------------------------------------------------------


def step_line(step: dict[str, Any]) -> str:
    """``#1 po purchaseOrder confirmed pgRowId=… externalId=PO-1`` and the refusal, if any."""
    parts = [f"#{step['sequence']}", step["stepId"], step["recordType"], step["disposition"]]
    if step.get("rowKey"):
        parts.append(f"row={step['rowKey']} slice={step['slice']}")
    if step.get("pgRowId"):
        parts.append(f"pgRowId={step['pgRowId']}")
    if step.get("externalId"):
        parts.append(f"externalId={step['externalId']}")
    if step.get("superseded"):
        parts.append(f"[set aside by redrive {step['superseded']}]")
    refusal = step.get("refusal")
    if refusal:
        field = f" ({refusal['field']})" if refusal.get("field") else ""
        parts.append(f"— {refusal['code']}{field}: {refusal['message']}")
    return "  " + " ".join(parts)


def run_lines(run: dict[str, Any], steps: list[dict[str, Any]]) -> list[str]:
    lines = [f"{run['processId']} {run['runId']}: {run['state']}"]
    if run.get("reason"):
        lines.append(f"  reason: {run['reason']}")
    if run.get("outstanding"):
        lines.append(f"  outstanding: {run['outstanding']}")
    if run.get("pendingReason") and run["pendingReason"] not in ("queued", "running"):
        due = run.get("wakeAt") or run.get("retryAt")
        lines.append(f"  waiting: {run['pendingReason']}" + (f" until {due}" if due else ""))
    if run.get("linkedFrom"):
        lines.append(f"  {run['linkedFrom']['how']} of: {run['linkedFrom']['runId']}")
    for link in run.get("linkedTo") or []:
        lines.append(f"  {link['how']}: {link['runId']}")
    if run.get("redrives"):
        lines.append(f"  redrives: {run['redrives']}")
    for key, label in (
        ("invokedBy", "invoked by"),
        ("startedAt", "started"),
        ("finishedAt", "finished"),
    ):
        if run.get(key):
            lines.append(f"  {label}: {run[key]}")
    lines.extend(step_line(step) for step in steps)
    return lines


def follow_hint(run_id: str) -> str:
    return f"turbobase logs --process-run {run_id} --follow"


def trigger_text(trigger: dict[str, Any]) -> str:
    if trigger.get("kind") == "schedule":
        return f"schedule {trigger.get('cron')} ({trigger.get('timezone')})"
    if trigger.get("kind") == "record":
        enters = ",".join(f"{k}={v}" for k, v in (trigger.get("enters") or {}).items())
        return f"record {trigger.get('record')} enters {enters}"
    if trigger.get("kind") == "event":
        return f"event {trigger.get('event')}"
    return str(trigger.get("kind", "manual"))


# --- verbs -------------------------------------------------------------------------------------


def processes_list(args: argparse.Namespace, client: Client) -> int:
    body = client.get("/v1/processes")
    lines: list[str] = []
    for process in body["processes"]:
        switch = "on" if process["enabled"] else f"off ({process.get('disabledReason')})"
        kind = " migration" if process.get("isMigration") else ""
        fires = "; ".join(trigger_text(t) for t in process.get("triggers") or [process["trigger"]])
        lines.append(f"{process['id']}{kind}  trigger={fires}  {switch}")
        if process.get("description"):
            lines.append(f"  {process['description']}")
        for run in process["lastRuns"]:
            failure = run.get("failure")
            why = (
                f"  {failure['stepId']}: {failure['code']}: {failure['message']}" if failure else ""
            )
            lines.append(f"  {run['runId']}  {run['state']}  outstanding={run['outstanding']}{why}")
    emit(args, body, "\n".join(lines) if lines else "no processes are deployed")
    return 0


def processes_runs(args: argparse.Namespace, client: Client) -> int:
    found = bool(args.where or args.state)
    if found:  # the search route takes the process as a filter like any other
        path, filters = "/v1/processes/runs", _runs_filters(args)
    elif args.process_id is not None:
        path, filters = f"/v1/processes/{quote(args.process_id, safe=':')}/runs", []
    else:
        raise CliError(
            "name a process (ID), or find runs with --where input.FIELD=VALUE or --state"
        )
    runs: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:  # every page, a keyset page at a time (each page costs the same)
        params = [*filters, ("limit", HISTORY_PAGE)]
        if cursor is not None:
            params.append(("cursor", cursor))
        page = client.get(path, params=params)
        runs.extend(page["runs"])
        cursor = page["next"]
        if cursor is None:
            break
    lines = [
        f"{run['runId']}  " + (f"{run['processId']}  " if found else "") + f"{run['mode']}  "
        f"{run['state']}  outstanding={run['outstanding']}  started={run['startedAt'] or '-'}"
        + (f"  {run['reason']}" if run.get("reason") else "")
        for run in runs
    ]
    nothing = (
        "no runs found that you can see"
        if found
        else f"no runs of {args.process_id} that you can see"
    )
    emit(args, runs, "\n".join(lines) if lines else nothing)
    return 0


def _runs_filters(args: argparse.Namespace) -> list[tuple[str, Any]]:
    """The query string of a search: ``--where input.F=V`` as ``input.F=V``, each ``--state``."""
    filters: list[tuple[str, Any]] = []
    if args.process_id is not None:
        filters.append(("processId", args.process_id))
    for where in args.where:
        name, is_pair, value = where.partition("=")
        if not is_pair or not name.startswith("input.") or name == "input.":
            raise CliError(f"--where {where!r}: write it as input.FIELD=VALUE")
        filters.append((name, value))
    filters.extend(("state", state) for state in args.state)
    return filters


def processes_run(args: argparse.Namespace, client: Client) -> int:
    body = client.get(f"/v1/processes/runs/{quote(args.run_id, safe='')}")
    emit(args, body, "\n".join(run_lines(body["run"], body["steps"])))
    return 0


def input_read(args: argparse.Namespace) -> Any:
    if args.input_file is not None:
        try:
            text = Path(args.input_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise CliError(f"--input-file {args.input_file}: {exc.strerror or exc}") from exc
        origin = args.input_file
    else:
        text, origin = args.input, "--input"
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CliError(f"{origin} is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise CliError(
            f"{origin} must hold a JSON object (the process's input), not {type(value).__name__}"
        )
    return value


def processes_invoke(args: argparse.Namespace, client: Client) -> int:
    body = input_read(args)
    path = f"/v1/processes/{quote(args.process_id, safe=':')}"
    if args.plan:
        plan = client.post(path + "/plan", body)
        emit(args, plan, "\n".join(plan_lines(plan)))
        return 0
    if not args.sync:
        answer = client.post(path, body)
        emit(args, answer, f"queued {answer['runId']}\nfollow it: {follow_hint(answer['runId'])}")
        return 0
    client.timeout = max(client.timeout, SYNC_TIMEOUT_S)
    answer = client.post(path, body, params={"mode": "sync"})
    if answer.get("error") == ProcessError.SYNC_BUDGET_EXCEEDED:
        emit(
            args,
            answer,
            f"{answer['processId']} {answer['runId']} is still going ({answer['state']}): "
            f"it did not settle within the instance's synchronous budget\n"
            f"watch it: {follow_hint(answer['runId'])}",
        )
        return 0
    emit(args, answer, "\n".join(run_lines(answer, answer.get("steps") or [])))
    return 0 if answer["state"] == "committed" else 1


def processes_steer(args: argparse.Namespace, client: Client) -> int:
    answer = client.post(f"/v1/processes/runs/{quote(args.run_id, safe='')}/{args.verb}")
    if args.verb == "cancel":
        text = f"{answer['runId']}: {answer['state']}"
        if answer["state"] == "running":
            text += " (it stops at its next step boundary)"
    elif answer.get("queued"):
        text = f"{args.verb} of {answer['runId']} queued ({answer['state']})\nwatch it: {follow_hint(answer['runId'])}"
    else:
        text = f"{answer['runId']} is already {answer['state']}; nothing queued"
    emit(args, answer, text)
    return 0


def processes_relink(args: argparse.Namespace, client: Client) -> int:
    """``retry`` / ``redirect``: the new run's id, the old one's, and how to follow the new one."""
    path = f"/v1/processes/runs/{quote(args.run_id, safe='')}/{args.verb}"
    answer = client.post(path, input_read(args) if args.verb == "redirect" else None)
    old = answer.get("retryOf") or answer.get("redirectOf")
    emit(
        args,
        answer,
        f"{args.verb} of {old}: queued {answer['runId']}\nfollow it: {follow_hint(answer['runId'])}",
    )
    return 0


def processes_redrive(args: argparse.Namespace, client: Client) -> int:
    """The run queued again (same id), the version it goes on with, and any record changed since."""
    path = f"/v1/processes/runs/{quote(args.run_id, safe='')}/redrive"
    answer = client.post(path, {"version": args.version})
    run = answer["run"]
    lines = [
        f"redrive {run['redrives']} of {run['runId']} queued ({run['state']}) "
        f"on version {run['moduleVersion']}"
    ]
    lines += [
        f"  changed since its step wrote it: {c['recordType']} {c['pgRowId']} (step {c['stepId']})"
        for c in answer["changedSince"]
    ]
    lines.append(f"watch it: {follow_hint(run['runId'])}")
    emit(args, answer, "\n".join(lines))
    return 0


def plan_lines(plan: dict[str, Any]) -> list[str]:
    """A plan as text: each step's write, its refusal or hold, then what cannot be known yet."""
    lines = [f"{plan['processId']} v{plan['version']}: a plan, nothing written"]
    for step in plan["steps"]:
        line = f"  {step['stepId']}  {step['action']} {step['recordType'] or step['kind']}"
        if step["record"] is not None:
            line += "  " + json.dumps(step["record"]["parent"], sort_keys=True)
        if step["guardrail"]:
            line += f"  [{step['guardrail']['decision']}: {step['guardrail']['rule']}]"
        if step["hook"]:
            line += f"  [hook refuses: {step['hook']['code']}]"
        lines.append(line)
    lines += [f"  refused {r['stepId']}: {r['code']}: {r['message']}" for r in plan["refusals"]]
    lines += [f"  unknown {u['stepId']}: {u['why']}" for u in plan["unknowns"]]
    if "rowsOutstanding" in plan:
        lines.append(f"  rows outstanding after these: {plan['rowsOutstanding']}")
    return lines
