"""``turbobase logs``: the one log verb. ``--process-run <runId>`` prints a run's ledger;
``--follow`` keeps polling and prints each change until the run reaches a terminal state.

Following a run ends by itself (unlike a conduit's log): a run always reaches committed, failed,
rolled_back, cancelled or refused, so ``--follow`` returns there instead of polling until interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any
from urllib.parse import quote

from turbobase.cli.client import Client
from turbobase.cli.processes import step_line

TERMINAL = ("committed", "failed", "rolled_back", "cancelled", "refused")


def register(subparsers: argparse._SubParsersAction) -> None:
    logs = subparsers.add_parser(
        "logs", help="logs: a process run's ledger (--process-run ID [--follow])"
    )
    logs.add_argument(
        "--process-run",
        required=True,
        metavar="RUN_ID",
        dest="process_run",
        help="the run to print",
    )
    logs.add_argument("--follow", action="store_true", help="keep printing until the run ends")
    logs.add_argument(
        "--interval", type=float, default=1.0, metavar="SECONDS", help=argparse.SUPPRESS
    )
    logs.set_defaults(handler=logs_process_run)


def _state_line(run: dict[str, Any]) -> str:
    text = f"{run['processId']} {run['runId']}: {run['state']}"
    if run.get("pendingReason") and run["pendingReason"] not in ("queued", "running", run["state"]):
        text += f" ({run['pendingReason']})"
    if run["state"] in TERMINAL:
        if run.get("outstanding"):
            text += f", outstanding {run['outstanding']}"
        if run.get("reason"):
            text += f" — {run['reason']}"
    return text


def _print(args: argparse.Namespace, event: dict[str, Any], text: str) -> None:
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(event, sort_keys=True) + "\n")
    else:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()


def logs_process_run(args: argparse.Namespace, client: Client) -> int:
    path = f"/v1/processes/runs/{quote(args.process_run, safe='')}"
    seen_steps: dict[int, dict[str, Any]] = {}
    last_state: str | None = None
    while True:
        body = client.get(path)
        run = body["run"]
        state_key = f"{run['state']}|{run.get('pendingReason')}"
        if state_key != last_state and run["state"] not in TERMINAL:
            _print(args, {"run": run}, _state_line(run))
            last_state = state_key
        for step in body["steps"]:
            if seen_steps.get(step["sequence"]) != step:  # new, or changed (e.g. rolled back)
                seen_steps[step["sequence"]] = step
                _print(args, {"step": step}, step_line(step))
        if run["state"] in TERMINAL or not args.follow:
            if run["state"] in TERMINAL:
                _print(args, {"run": run}, _state_line(run))
            return 0
        time.sleep(max(args.interval, 0.05))
