"""Type-check an extension's files against the instance's declarations — pure Python, no Django.

The TypeScript 5.7 checker dukpy bundles runs in a compiler child (``extensions.transpile``) over
in-memory files only: the author's files, the declarations (``turbobase-env.d.ts``, written by
``processes.authoring_types``) and a small library of global types (``js/typecheck_lib.d.ts``; the
bundled compiler ships no ``lib.d.ts``). No network, no file system: the compiler host reads
nothing but the dict it is handed.

What is reported is what a process author gets wrong against the catalog: a build returning an
undeclared or protected field or a value of the wrong type, and a ``ctx.row``/``ctx.input``
property that does not exist (``REPORTED``). Other diagnostics are dropped: the checker runs with
a minimal library, so they say more about that library than about the author's code.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extensions.transpile import CompileBudget, compiler_eval

DECLARATIONS_NAME = "turbobase-env.d.ts"
# Not assignable, no such property, bad argument, excess property, misspelt property (x2).
REPORTED = frozenset({2322, 2339, 2345, 2353, 2551, 2561})
# The checker's whole-step mismatch, restated at the property by a finding of our own.
_RESTATED = frozenset({2322, 2345})
_JS_DIR = Path(__file__).resolve().parent / "js"
_LIB_NAME = "/__turbobase_lib.d.ts"


@dataclass(frozen=True)
class TypeProblem:
    """One type error, at a 1-based position in the author's file (its project-relative path)."""

    file: str
    line: int
    column: int
    ts_code: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: TS{self.ts_code}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "tsCode": self.ts_code,
            "message": self.message,
        }


def declarations_path(entry: str) -> str:
    """Where the declarations sit for ``entry``: beside it (``processes/turbobase-env.d.ts``)."""
    return posixpath.join(posixpath.dirname(entry), DECLARATIONS_NAME)


def typecheck(
    files: dict[str, str], *, declarations: str, entry: str, budget: CompileBudget | None = None
) -> list[TypeProblem]:
    """The type errors in ``files`` (path → source, as an extension bundle sends them) against
    ``declarations``, the ``REPORTED`` kinds only, in file and position order."""
    authored = {
        "/" + path: text
        for path, text in files.items()
        if path.endswith((".ts", ".mts")) and not path.endswith(".d.ts")
    }
    where = "/" + declarations_path(entry)
    in_memory = {
        **authored,
        where: declarations,
        _LIB_NAME: (_JS_DIR / "typecheck_lib.d.ts").read_text(encoding="utf-8"),
    }
    found = compiler_eval(
        (_JS_DIR / "typecheck.js").read_text(encoding="utf-8"),
        budget=budget or CompileBudget(),
        file=entry,
        files=in_memory,
        authored=sorted(authored),
        declarations=where,
        lib=_LIB_NAME,
    )
    return _problems(found)


def _problems(found: list[dict[str, Any]]) -> list[TypeProblem]:
    # The checker's own report of a payload's wrong value spans the whole step; the property-level
    # finding inside that span says the same thing at the right place, so the span's goes.
    own = [d for d in found if d.get("own")]
    kept = [
        d
        for d in found
        if d["code"] in REPORTED
        and (
            d.get("own")
            or d["code"] not in _RESTATED
            or not any(
                o["file"] == d["file"] and d["start"] <= o["start"] < d.get("end", 0) for o in own
            )
        )
    ]
    unique = {
        (d["file"], d["line"], d["column"], d["code"]): TypeProblem(
            file=d["file"].lstrip("/"),
            line=d["line"],
            column=d["column"],
            ts_code=d["code"],
            message=d["message"],
        )
        for d in kept
    }
    return sorted(unique.values(), key=lambda p: (p.file, p.line, p.column))
