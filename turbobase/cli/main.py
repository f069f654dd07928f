"""``turbobase``: the command line for operators and CI.

Subcommands live in sibling modules, one per concept (``data.py``, ``instance.py``; other rooms add
``ext.py``, ``processes.py``, ``logs.py`` …). A module joins the CLI by defining
``register(subparsers)``, which adds its parsers and sets ``handler=`` on each leaf: a function
``(args, client) -> exit code``. Nothing here names them, so adding a verb never edits this file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Iterator, Sequence
from types import ModuleType

import turbobase.cli as cli_package
from kernel.errors import TurbobaseError
from turbobase.cli.client import Client, ClientError


def command_modules() -> Iterator[ModuleType]:
    """Every ``turbobase.cli`` module that registers subcommands, in name order."""
    for info in sorted(pkgutil.iter_modules(cli_package.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name == "main":
            continue
        module = importlib.import_module(f"{cli_package.__name__}.{info.name}")
        if callable(getattr(module, "register", None)):
            yield module


def parser_build() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="turbobase",
        description="Talk to a Turbobase instance. Reads TURBOBASE_URL and TURBOBASE_TOKEN.",
    )
    parser.add_argument("--json", action="store_true", help="print the instance's answers as JSON")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in command_modules():
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = parser_build()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        # A group named without its verb (``turbobase data``) shows that group's help.
        (getattr(args, "group_parser", None) or parser).print_help(sys.stderr)
        return 2
    try:
        return int(handler(args, Client.from_env()) or 0)
    except ClientError as exc:
        print(f"turbobase: {exc}", file=sys.stderr)
        return exc.exit_code
    except TurbobaseError as exc:  # a local refusal, e.g. a project file that cannot be read
        print(f"turbobase: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
