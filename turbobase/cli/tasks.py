"""``turbobase tasks …``: your human tasks — list them, complete one with a JSON output, reject one
with a reason. The same calls as ``/v1/tasks`` (a token needs ``data:read`` to list and
``data:write`` to decide, and decides as its owner)."""

from __future__ import annotations

import argparse
import json
from typing import Any
from urllib.parse import quote

from turbobase.cli.base import CliError, emit
from turbobase.cli.client import Client

STATES = ("open", "completed", "rejected", "expired", "cancelled")


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser("tasks", help="your human tasks: list, complete, reject")
    group.set_defaults(group_parser=group)
    verbs = group.add_subparsers(dest="tasks_command", metavar="VERB")

    listing = verbs.add_parser("list", help="your tasks and your groups' (an admin's: all)")
    listing.add_argument(
        "--state", action="append", choices=STATES, help="only these states (repeatable)"
    )
    listing.set_defaults(handler=tasks_list)

    complete = verbs.add_parser("complete", help="complete a task: its run goes on with the output")
    complete.add_argument("task_id", metavar="TASK_ID")
    complete.add_argument("--output", metavar="JSON", required=True, help="the output, any JSON")
    complete.set_defaults(handler=tasks_complete)

    reject = verbs.add_parser("reject", help="reject a task: its step fails TASK_REJECTED")
    reject.add_argument("task_id", metavar="TASK_ID")
    reject.add_argument("--reason", metavar="TEXT", required=True, help="why")
    reject.set_defaults(handler=tasks_reject)


def task_line(task: dict[str, Any]) -> str:
    """``<taskId>  open  Approve PO-7  for group:finance  (t:approve-order <runId> approve)``."""
    line = (
        f"{task['taskId']}  {task['state']}  {task['title']}  for {task['assignee']}  "
        f"({task['processId']} {task['runId']} {task['stepId']})"
    )
    if task.get("decidedBy"):
        line += f"  by {task['decidedBy']}"
    if task.get("reason"):
        line += f": {task['reason']}"
    return line


def tasks_list(args: argparse.Namespace, client: Client) -> int:
    params = {"state": args.state} if args.state else None
    body = client.get("/v1/tasks", params=params)
    lines = [task_line(task) for task in body["tasks"]]
    emit(args, body, "\n".join(lines) if lines else "no tasks for you")
    return 0


def tasks_complete(args: argparse.Namespace, client: Client) -> int:
    try:
        output = json.loads(args.output)
    except ValueError as exc:
        raise CliError(f"--output is not JSON: {exc}") from exc
    task = client.post(f"/v1/tasks/{quote(args.task_id, safe='')}/complete", {"output": output})
    emit(args, task, f"completed: {task_line(task)}")
    return 0


def tasks_reject(args: argparse.Namespace, client: Client) -> int:
    task = client.post(f"/v1/tasks/{quote(args.task_id, safe='')}/reject", {"reason": args.reason})
    emit(args, task, f"rejected: {task_line(task)}")
    return 0
