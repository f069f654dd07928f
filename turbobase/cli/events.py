"""``turbobase events send NAME --data JSON [--key K]``: send an event (``POST /v1/events``; a token
needs ``data:write``). It starts the runs its triggers name and resumes runs waiting for it."""

from __future__ import annotations

import argparse
import json
from typing import Any

from turbobase.cli.base import CliError, emit
from turbobase.cli.client import Client


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser("events", help="send an event")
    group.set_defaults(group_parser=group)
    verbs = group.add_subparsers(dest="events_command", metavar="VERB")
    send = verbs.add_parser("send", help="send an event: start its triggers, resume its waits")
    send.add_argument("name", metavar="NAME", help="the event's name, e.g. order.paid")
    send.add_argument("--data", metavar="JSON", default="{}", help="a JSON object (default {})")
    send.add_argument(
        "--key", metavar="K", help="idempotency: the same key again is the same event"
    )
    send.set_defaults(handler=events_send)


def sent_line(body: dict[str, Any]) -> str:
    """``event <id> order.paid: started 1 run, resumed 2 waits`` (``(sent before)`` on a replay)."""
    runs, resumed = len(body["runs"]), body["resumed"]
    line = (
        f"event {body['eventId']} {body['name']}: started {runs} run{'' if runs == 1 else 's'}, "
        f"resumed {resumed} wait{'' if resumed == 1 else 's'}"
    )
    if body.get("replayed"):
        line += " (sent before with this key: nothing new)"
    return "\n".join(
        [line, *(f"  {r['runId']}  {r['processId']}  {r['state']}" for r in body["runs"])]
    )


def events_send(args: argparse.Namespace, client: Client) -> int:
    try:
        data = json.loads(args.data)
    except ValueError as exc:
        raise CliError(f"--data is not JSON: {exc}") from exc
    payload: dict[str, Any] = {"name": args.name, "data": data}
    if args.key is not None:
        payload["key"] = args.key
    body = client.post("/v1/events", payload)
    emit(args, body, sent_line(body))
    return 0
