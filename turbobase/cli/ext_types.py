"""``turbobase ext types`` and the type check ``turbobase ext lint`` runs.

``ext types`` asks the instance for the declarations (``GET /v1/processes/types``: its record
types and deployed processes) and writes them to ``turbobase-env.d.ts`` beside the project's
processes. ``ext lint`` then checks a process against that file offline, in the compiler child
(``extensions.typecheck``): no instance, no network.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from extensions.project import text_read
from extensions.typecheck import DECLARATIONS_NAME, TypeProblem, declarations_path
from turbobase.cli.base import CliError, emit
from turbobase.cli.client import Client
from turbobase.cli.ext_new import new_file_target


def ext_types(args: argparse.Namespace, client: Client) -> int:
    body = client.get("/v1/processes/types")
    text = body.get("declarations") if isinstance(body, dict) else None
    if not isinstance(text, str):
        raise CliError("the instance answered no declarations (is it older than this CLI?)")
    target = new_file_target(args.dir, DECLARATIONS_NAME, default_folder="processes")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    emit(
        args,
        {"file": target.as_posix(), "chars": len(text)},
        f"wrote {target.as_posix()} (record types and deployed processes)",
    )
    return 0


def on_disk(path: str, key: str) -> str:
    """The file an extension key (``processes/po.ts``) names, as the author spelt the entry's
    directory (``demo/processes/po.ts`` for ``demo/processes/x.ts``)."""
    inside = key.split("/", 1)[1] if "/" in key else key
    return (Path(path).parent / inside).as_posix()


def lint_types(path: str, entry: str, files: dict[str, str]) -> list[TypeProblem] | None:
    """The type errors of the process at ``path`` against the declarations beside it, with
    on-disk file names; ``None`` when there is no declarations file to check against."""
    from extensions.typecheck import typecheck

    declarations = Path(on_disk(path, declarations_path(entry)))
    if not declarations.is_file():
        return None
    problems = typecheck(files, declarations=text_read(declarations), entry=entry)
    # Every file of the directory is in the program (a sibling's types count); each file's own
    # errors are its own lint's to report.
    return [
        TypeProblem(on_disk(path, p.file), p.line, p.column, p.ts_code, p.message)
        for p in problems
        if p.file == entry
    ]
