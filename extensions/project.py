"""A user's extension project on disk, read into the bundle the instance deploys.

A project is a folder holding ``turbobase.config.json`` (its environments), ``processes/`` and
``hooks/`` (every file with a ``defineProcess``/``defineHook`` default export is one module; the
other files are siblings it may import) and, optionally, ``turbobase/schedules.json`` (the seed's
path). The ``turbobase`` CLI and the demo loader (``make run``) read a project through this one
module, so a project deployed either way has the same entries, files and hashes — a plan right
after ``make run`` reports the demo ``unchanged``.

It reads files and nothing else: no network, no database, no Django.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from extensions.codes import ExtensionCode
from extensions.idliteral import first_id_literal
from kernel.errors import InvalidRequest

CONFIG_NAME = "turbobase.config.json"
SCHEDULES_PATH = Path("turbobase") / "schedules.json"
PROJECT_FOLDERS = ("processes", "hooks")
SOURCE_SUFFIXES = (".ts", ".js", ".mts", ".mjs")
DEFINES = re.compile(r"\bdefine(Process|Hook|Conduit)\s*\(")


class ProjectFileInvalid(InvalidRequest):
    """A project file cannot be read."""

    code = ExtensionCode.PROJECT_FILE_INVALID


def text_read(path: Path) -> str:
    """A project file as UTF-8 text, or ``ProjectFileInvalid`` naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectFileInvalid(
            f"{path}: cannot read it as UTF-8 text ({exc})", field=str(path)
        ) from exc


def _is_source(path: Path, relative: Path) -> bool:
    return (
        path.is_file()
        and path.name.endswith(SOURCE_SUFFIXES)
        and not path.name.endswith(".d.ts")
        and "node_modules" not in relative.parts
        and not any(part.startswith(".") for part in relative.parts)
    )


def extension_files(path: str | Path) -> tuple[str, dict[str, str]]:
    """The entry key and every source file below its directory, keyed by ``<dir name>/<path>``."""
    entry = Path(path)
    if not entry.is_file():
        raise ProjectFileInvalid(f"{path}: no such file", field=str(path))
    directory = entry.resolve().parent
    prefix = directory.name
    files: dict[str, str] = {}
    for candidate in sorted(directory.rglob("*")):
        relative = candidate.relative_to(directory)
        if _is_source(candidate, relative):
            files[f"{prefix}/{relative.as_posix()}" if prefix else relative.as_posix()] = text_read(
                candidate
            )
    key = f"{prefix}/{entry.name}" if prefix else entry.name
    files.setdefault(key, text_read(entry.resolve()))
    return key, files


def module_entries(root: Path) -> list[Path]:
    """The module files of the project at ``root``: sources in its folders that define something."""
    entries = []
    for folder in PROJECT_FOLDERS:
        base = root / folder
        for path in sorted(base.rglob("*")) if base.is_dir() else []:
            if _is_source(path, path.relative_to(root)) and DEFINES.search(text_read(path)):
                entries.append(path)
    return entries


def project_bundle(root: Path) -> dict[str, Any]:
    """The body of ``/v1/extensions/bundle/{plan,apply}`` for the project at ``root``.

    ``schedules`` is sent only when ``turbobase/schedules.json`` exists (then it is the whole set:
    ``[]`` removes every schedule); without the file the instance's schedules are left alone.
    """
    modules = []
    for path in module_entries(root):
        entry, files = extension_files(path)
        modules.append({"entry": entry, "files": files})
    body: dict[str, Any] = {"modules": modules}
    schedules = root / SCHEDULES_PATH
    if schedules.is_file():
        try:
            body["schedules"] = json.loads(text_read(schedules))
        except ValueError as exc:
            raise ProjectFileInvalid(
                f"{schedules}: not readable JSON ({exc})", field=str(schedules)
            ) from exc
    return body


def declared_ids(root: Path) -> dict[str, str]:
    """``{id: file}`` for every module the project declares (its first ``id`` literal)."""
    declared: dict[str, str] = {}
    for path in module_entries(root):
        literal = first_id_literal(text_read(path))
        if literal is not None:
            declared.setdefault(literal, path.relative_to(root).as_posix())
    return declared
