"""What every ``turbobase`` subcommand shares: its error type and how it prints results."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, Protocol

from turbobase.cli.client import Client, ClientError


class CliError(ClientError):
    """A local failure the user can act on (bad input file, bad JSON); ``main`` prints it."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


# A subcommand handler: parsed arguments and a client in, process exit code out.
Handler = Callable[[argparse.Namespace, Client], int]


class CommandModule(Protocol):
    """A module under ``turbobase/cli/`` that adds subcommands: ``main`` finds it by ``register``."""

    def register(self, subparsers: argparse._SubParsersAction) -> None: ...


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    """Print ``text`` for a person, or ``data`` as JSON when ``--json`` was given."""
    if getattr(args, "json", False):
        json.dump(data, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(text.rstrip("\n") + "\n")
