"""``turbobase data …``: record verbs that operators run by hand.

``data settle <recordType> <pgRowId>`` links a row whose create landed upstream but whose link back
failed (``write_settle_conflict``); the instance reads the source's id from the row's write state.
``data lineage <recordType> <pgRowId>`` prints every write that touched the record, oldest first.
"""

from __future__ import annotations

import argparse
from urllib.parse import quote

from turbobase.cli.base import emit
from turbobase.cli.client import Client


def register(subparsers: argparse._SubParsersAction) -> None:
    data = subparsers.add_parser("data", help="record verbs (settle, lineage)")
    data.set_defaults(group_parser=data)
    verbs = data.add_subparsers(dest="data_command", metavar="VERB")
    settle = verbs.add_parser(
        "settle", help="link a row stuck in write_settle_conflict to its source id"
    )
    settle.add_argument("record_type", metavar="recordType")
    settle.add_argument("pg_row_id", metavar="pgRowId")
    settle.set_defaults(handler=data_settle)
    lineage = verbs.add_parser(
        "lineage", help="every write that touched a record: who, which run and step, the source"
    )
    lineage.add_argument("record_type", metavar="recordType")
    lineage.add_argument("pg_row_id", metavar="pgRowId")
    lineage.set_defaults(handler=data_lineage)


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


def data_lineage(args: argparse.Namespace, client: Client) -> int:
    path = f"/v1/data/{quote(args.record_type, safe='')}/{quote(args.pg_row_id, safe='')}/lineage"
    entries = client.get(path)
    lines = [_lineage_line(entry) for entry in entries]
    emit(args, entries, "\n".join(lines) if lines else "no writes recorded")
    return 0


def _lineage_line(entry: dict) -> str:
    """``at  action outcome  by actor  [process vN run step]  [source verdict externalId]``."""
    line = f"{entry['at']}  {entry['action']} {entry['outcome']}  by {entry['actor'] or '-'}"
    if entry["runId"]:
        line += (
            f"  {entry['processId'] or '?'} v{entry['version'] or '?'} run {entry['runId']}"
            f" step {entry['stepId'] or '-'}"
        )
    source = entry["source"]
    if source:
        line += f"  source {source['verdict']} {source['externalId'] or ''}".rstrip()
    return line
