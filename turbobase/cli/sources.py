"""``turbobase sources list``: each connected source's pacing and backlog (administrators).

The limits themselves are settings: ``turbobase settings set sources.<name>.max_per_second 5``.
"""

from __future__ import annotations

import argparse
from typing import Any

from turbobase.cli.base import emit
from turbobase.cli.client import Client


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser("sources", help="connected sources (administrators): list")
    group.set_defaults(group_parser=group)
    verbs = group.add_subparsers(dest="sources_command", metavar="VERB")
    verbs.add_parser(
        "list", help="each source's limits, writes in flight, backlog and backoff"
    ).set_defaults(handler=sources_list)


def _limit(value: int | None, unit: str) -> str:
    return "no limit" if value is None else f"{value}{unit}"


def _line(row: dict[str, Any]) -> str:
    paced = f", backing off until {row['pacedUntil']}" if row["backingOff"] else ""
    oldest = (
        f" (oldest {row['oldestBacklogAgeS']:g}s)" if row["oldestBacklogAgeS"] is not None else ""
    )
    return (
        f"{row['name']}: {_limit(row['maxPerSecond'], '/s')}, "
        f"{_limit(row['maxInFlight'], ' in flight')}; {row['inFlight']} in flight, "
        f"{row['backlog']} waiting{oldest}{paced}"
    )


def sources_list(args: argparse.Namespace, client: Client) -> int:
    rows = client.get("/v1/sources")["sources"]
    emit(args, rows, "\n".join(_line(row) for row in rows) or "no connected sources")
    return 0
