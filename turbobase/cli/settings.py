"""``turbobase settings …``: the instance settings an administrator reads and changes.

``list`` shows every setting with the value in force and its default; ``get KEY`` one setting;
``set KEY VALUE`` stores an override; ``unset KEY`` puts the default back. Every change is kept in
the audit trail.

The instance takes JSON values strictly typed (``"10"`` is not 10), so ``set`` turns its text into
JSON here, strictly too: ``true``/``false`` is a boolean, ASCII digits with an optional leading
minus a number; anything else (``1_000``, ``1,000``, ``1e3``, ``on``) is refused before it is sent.
The instance then checks the setting's type and bounds and names the key it refuses. An old name
(``PROCESS_SLICE_MAX_ROWS``, kept for one release) works everywhere and answers the new one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
from typing import Any

from guardrails.setting_keys import setting_key_resolve
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
    put.add_argument("value", help="a whole number (digits only), or true/false for a switch")
    put.set_defaults(handler=settings_set)
    unset = verbs.add_parser("unset", help="drop the override: the default is in force again")
    unset.add_argument("key")
    unset.set_defaults(handler=settings_unset)


def _line(row: dict[str, Any]) -> str:
    value = json.dumps(row["value"])
    mark = "" if row["value"] == row["default"] else f" (default {json.dumps(row['default'])})"
    return f"{row['key']} = {value}{mark}"


def _one(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """The row of ``key``; an old name (``PROCESS_SLICE_MAX_ROWS``) finds its new one's row."""
    wanted = setting_key_resolve(key) or key
    for row in rows:
        if row["key"] == wanted:
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


_WHOLE_NUMBER = re.compile(r"-?[0-9]+")


def value_from_text(key: str, text: str) -> bool | int:
    """The JSON value ``set`` sends for ``text``: true/false, a whole number, or ``CliError``."""
    if text in ("true", "false"):
        return text == "true"
    if _WHOLE_NUMBER.fullmatch(text):
        with contextlib.suppress(ValueError):  # past Python's 4300 digits: not a number to send
            return int(text)
    raise CliError(f"{key}: {text!r} is neither a whole number nor true/false")


def settings_set(args: argparse.Namespace, client: Client) -> int:
    return _patch(args, client, value_from_text(args.key, args.value))


def settings_unset(args: argparse.Namespace, client: Client) -> int:
    return _patch(args, client, None)
