"""``turbobase ext …``: scaffold, lint, test, deploy, plan and remove extensions.

``new``, ``lint`` and ``test`` are offline: they fold, transpile and evaluate the author's files on
this machine (in the same sandbox child the instance uses) and need no TURBOBASE_URL. ``deploy``,
``plan`` and ``remove`` talk to the instance named by TURBOBASE_URL with TURBOBASE_TOKEN.

An extension's files are the file named and every ``.ts``/``.js`` file below its directory, keyed
``<directory name>/<path>`` (``processes/po.ts``, ``processes/shared-rule.ts``): the instance folds
in the siblings the entry imports and refuses any import outside that directory.

This module only builds the parsers, one small registrar per verb; the handlers live with their
concept: ``ext_new`` (scaffolds), ``ext_offline`` (lint, test), ``ext_deploy`` (deploy, plan,
remove), ``ext_types`` (the declarations file and lint's type check).
"""

from __future__ import annotations

import argparse

from turbobase.cli.ext_deploy import ext_deploy, ext_plan, ext_remove
from turbobase.cli.ext_new import ext_new_hook, ext_new_process
from turbobase.cli.ext_offline import ext_lint, ext_test
from turbobase.cli.ext_process_test import process_test_arguments
from turbobase.cli.ext_types import ext_types

Verbs = argparse._SubParsersAction


def register(subparsers: Verbs) -> None:
    ext = subparsers.add_parser(
        "ext", help="extensions: new, lint, test, deploy, plan, remove, types"
    )
    ext.set_defaults(group_parser=ext)
    verbs = ext.add_subparsers(dest="ext_command", metavar="VERB")
    for registrar in (
        _register_new,
        _register_lint,
        _register_test,
        _register_deploy,
        _register_plan,
        _register_remove,
        _register_types,
    ):
        registrar(verbs)


def _scaffold_options(parser: argparse.ArgumentParser, *, dir_help: str) -> None:
    """The options every ``ext new`` kind shares: the id's scope, where to write, overwrite."""
    parser.add_argument(
        "--scope", default="app", help="the id's scope: <scope>:<name> (default: app)"
    )
    parser.add_argument("--dir", help=dir_help)
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")


def _register_new(verbs: Verbs) -> None:
    new = verbs.add_parser("new", help="scaffold an extension file")
    new_kinds = new.add_subparsers(dest="ext_kind", metavar="KIND")
    process = new_kinds.add_parser(
        "process", help="a process: a record, optionally then another from it"
    )
    process.add_argument(
        "--record", required=True, metavar="RECORD_TYPE", help="the first step's record type"
    )
    process.add_argument(
        "--then", metavar="RECORD_TYPE", help="a second record raised from the first"
    )
    process.add_argument("--on-failure", choices=("stop", "rollback"), default="stop")
    _scaffold_options(
        process,
        dir_help="where to write it (default: processes/ of the project the working "
        "directory is in, found by its turbobase.config.json; else ./processes)",
    )
    process.set_defaults(handler=ext_new_process)
    hook = new_kinds.add_parser(
        "hook", help="a before_save hook that refuses a write missing a field"
    )
    hook.add_argument(
        "--record", required=True, metavar="RECORD_TYPE", help="the record type it guards"
    )
    hook.add_argument(
        "--require", required=True, metavar="FIELD", help="the parent field it requires"
    )
    _scaffold_options(
        hook, dir_help="where to write it (default: hooks/ of the project, as for process)"
    )
    hook.set_defaults(handler=ext_new_hook)


def _register_lint(verbs: Verbs) -> None:
    lint = verbs.add_parser(
        "lint",
        help="offline checks (the id-literal trap; a process's types against the "
        "turbobase-env.d.ts beside it); exits 1 on an error",
    )
    lint.add_argument("files", nargs="+", metavar="FILE")
    lint.add_argument("--ci", action="store_true", help="exit non-zero on a warning too")
    lint.set_defaults(handler=ext_lint)


def _register_test(verbs: Verbs) -> None:
    test = verbs.add_parser(
        "test",
        help="run a hook's run() on a sample, or a process end to end with time skipped, here",
    )
    test.add_argument("file", metavar="FILE")
    test.add_argument(
        "--sample",
        metavar="JSON",
        help="a hook: a record ({parent, lines?}), a list of them, or @file.json",
    )
    process_test_arguments(test)
    test.set_defaults(handler=ext_test)


def _register_deploy(verbs: Verbs) -> None:
    deploy = verbs.add_parser(
        "deploy",
        help="deploy each FILE (with its sibling files) to the instance, "
        "or with --to ENV the whole project as one plan",
    )
    deploy.add_argument("files", nargs="*", metavar="FILE")
    deploy.add_argument(
        "--to",
        metavar="ENV",
        help="deploy the project (processes/, hooks/, "
        "turbobase/schedules.json) to ENV from turbobase.config.json, all or nothing",
    )
    deploy.add_argument(
        "--remove",
        action="append",
        default=[],
        metavar="ID",
        help="with --to: also remove this deployed extension in the same plan (repeatable)",
    )
    deploy.set_defaults(handler=ext_deploy)


def _register_plan(verbs: Verbs) -> None:
    plan = verbs.add_parser(
        "plan",
        help="list what is deployed that processes/ and hooks/ do not declare; "
        "with --to ENV, everything a deploy there would change",
    )
    plan.add_argument("--to", metavar="ENV", help="an environment from turbobase.config.json")
    plan.add_argument(
        "--remove",
        action="append",
        default=[],
        metavar="ID",
        help="with --to: plan removing this deployed extension too (repeatable)",
    )
    plan.set_defaults(handler=ext_plan)


def _register_remove(verbs: Verbs) -> None:
    remove = verbs.add_parser("remove", help="stop serving one deployed extension")
    remove.add_argument("id")
    remove.set_defaults(handler=ext_remove)


def _register_types(verbs: Verbs) -> None:
    types = verbs.add_parser(
        "types",
        help="write turbobase-env.d.ts (the instance's record types and deployed processes) "
        "beside the project's processes, for editors and ext lint",
    )
    types.add_argument(
        "--dir", help="where to write it (default: processes/ of the project, as for ext new)"
    )
    types.set_defaults(handler=ext_types)
