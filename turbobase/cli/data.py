"""``turbobase data …``: record verbs that operators run by hand.

``data settle <recordType> <pgRowId>`` links a row whose create landed upstream but whose link back
failed (``write_settle_conflict``); the instance reads the source's id from the row's write state.
"""

from __future__ import annotations

import argparse
from urllib.parse import quote

from turbobase.cli.base import emit
from turbobase.cli.client import Client


def register(subparsers: argparse._SubParsersAction) -> None:
    data = subparsers.add_parser("data", help="record verbs (settle)")
    data.set_defaults(group_parser=data)
    verbs = data.add_subparsers(dest="data_command", metavar="VERB")
    settle = verbs.add_parser(
        "settle", help="link a row stuck in write_settle_conflict to its source id"
    )
    settle.add_argument("record_type", metavar="recordType")
    settle.add_argument("pg_row_id", metavar="pgRowId")
    settle.set_defaults(handler=data_settle)


def data_settle(args: argparse.Namespace, client: Client) -> int:
    body = client.post(
        f"/v1/data/{quote(args.record_type, safe='')}/settle", {"pgRowId": args.pg_row_id}
    )
    emit(
        args,
        body,
        f"settled {args.record_type} {body.get('pgRowId')} → externalId {body.get('externalId')} "
        f"({body.get('syncState')})",
    )
    return 0
