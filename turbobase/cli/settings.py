"""``turbobase settings …``: the instance settings an administrator reads and changes.

``list`` shows every setting with the value in force and its default; ``get KEY`` one setting;
``set KEY VALUE`` stores an override (the instance checks type and bounds and names the key it
refuses); ``unset KEY`` puts the default back. Every change is kept in the audit trail.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from turbobase.cli.base import CliError, emit
from turbobase.cli.client import Client


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser(
        "settings", help="instance settings (administrators): list, get, set, unset"
    )
    group.set_defaults(group_parser=group)
    verbs = group.add_subparsers(dest="settings_command", metavar="VERB")
    verbs.add_parser("list", help="every setting, its value in force and its default").set_defaults(
        handler=settings_list
    )
    get = verbs.add_parser("get", help="one setting")
    get.add_argument("key")
    get.set_defaults(handler=settings_get)
    put = verbs.add_parser(
        "set", help="store an override (checked against the setting's type and bounds)"
    )
    put.add_argument("key")
    put.add_argument("value", help="a whole number, or true/false for a switch")
    put.set_defaults(handler=settings_set)
    unset = verbs.add_parser("unset", help="drop the override: the default is in force again")
    unset.add_argument("key")
    unset.set_defaults(handler=settings_unset)


def _line(row: dict[str, Any]) -> str:
    value = json.dumps(row["value"])
    mark = "" if row["value"] == row["default"] else f" (default {json.dumps(row['default'])})"
    return f"{row['key']} = {value}{mark}"


def _one(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    for row in rows:
        if row["key"] == key:
            return row
    raise CliError(f"{key!r} is not an instance setting (turbobase settings list shows them)")


def settings_list(args: argparse.Namespace, client: Client) -> int:
    rows = client.get("/v1/settings")["settings"]
    emit(args, rows, "\n".join(_line(row) for row in rows))
    return 0


def settings_get(args: argparse.Namespace, client: Client) -> int:
    row = _one(client.get("/v1/settings")["settings"], args.key)
    changed = f"\nchanged {row['changedAt']} by {row['changedBy']}" if row.get("changedAt") else ""
    emit(
        args,
        row,
        f"{_line(row)}\n{row['description']} [{row['type']}, {row['min']}–{row['max']}]{changed}",
    )
    return 0


def _patch(args: argparse.Namespace, client: Client, value: Any) -> int:
    row = _one(client.patch("/v1/settings", {args.key: value})["settings"], args.key)
    emit(args, row, _line(row))
    return 0


def settings_set(args: argparse.Namespace, client: Client) -> int:
    return _patch(
        args, client, args.value
    )  # sent as text: the instance parses it by the setting's type


def settings_unset(args: argparse.Namespace, client: Client) -> int:
    return _patch(args, client, None)
