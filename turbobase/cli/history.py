"""``turbobase history purge [--dry-run] [--finished-before TIME]``: purge the finished runs now.

Without ``--finished-before`` the instance's thresholds decide (``history.retain_days``,
``history.retain_runs``); with it, the runs that finished before TIME go (an ISO 8601 time with
its offset, checked by the instance). ``--dry-run`` counts what would go and changes nothing.
"""

from __future__ import annotations

import argparse
from typing import Any

from turbobase.cli.base import emit
from turbobase.cli.client import Client

# A first purge of a long history works for minutes; each batch it finished stays purged if the
# answer does not come back in time.
PURGE_WAIT_S = 900.0


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser("history", help="the run history (administrators): purge")
    group.set_defaults(group_parser=group)
    verbs = group.add_subparsers(dest="history_command", metavar="VERB")
    purge = verbs.add_parser(
        "purge", help="purge the finished runs past the retention thresholds, now"
    )
    purge.add_argument("--dry-run", action="store_true", help="count what would go; change nothing")
    purge.add_argument(
        "--finished-before",
        metavar="TIME",
        help="purge the runs that finished before TIME (ISO 8601 with offset, e.g. "
        "2026-01-31T00:00:00Z) instead of the thresholds",
    )
    purge.set_defaults(handler=history_purge)


def _sentence(answer: dict[str, Any], dry_run: bool) -> str:
    verb = "would purge" if dry_run else "purged"
    text = (
        f"{verb} {answer['runs']} runs: {answer['ledgerRows']} ledger rows, "
        f"{answer['events']} event waits, {answer['tasks']} tasks"
    )
    if answer.get("trailRows") or answer.get("auditEvents"):
        text += (
            f"; past their own retention: {answer['trailRows']} trail rows, "
            f"{answer['auditEvents']} audit events"
        )
    return text + (f"\narchived to {answer['archived']}" if answer.get("archived") else "")


def history_purge(args: argparse.Namespace, client: Client) -> int:
    body: dict[str, Any] = {"dryRun": bool(args.dry_run)}
    if args.finished_before is not None:
        body["finishedBefore"] = args.finished_before
    client.timeout = max(client.timeout, PURGE_WAIT_S)
    answer = client.post("/v1/history/purge", body)
    emit(args, answer, _sentence(answer, bool(args.dry_run)))
    return 0
