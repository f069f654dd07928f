"""``turbobase health`` and ``turbobase whoami``: is the instance up, and who does my token say I am."""

from __future__ import annotations

import argparse

from turbobase.cli.base import emit
from turbobase.cli.client import Client


def register(subparsers: argparse._SubParsersAction) -> None:
    health = subparsers.add_parser(
        "health", help="check that the instance answers (no token needed)"
    )
    health.set_defaults(handler=health_show)
    whoami = subparsers.add_parser("whoami", help="show the user and scopes behind TURBOBASE_TOKEN")
    whoami.set_defaults(handler=whoami_show)


def health_show(args: argparse.Namespace, client: Client) -> int:
    body = client.get("/v1/health", authenticated=False)
    emit(args, body, f"{body.get('status')} — {client.url} ({body.get('database', '?')})")
    return 0


def whoami_show(args: argparse.Namespace, client: Client) -> int:
    body = client.get("/v1/auth/session")
    role = "administrator" if body.get("isAdmin") else "user"
    scopes = ", ".join(body.get("scopes") or []) or "all (session)"
    emit(args, body, f"{body.get('username')} ({role}) at {client.url}; scopes: {scopes}")
    return 0
