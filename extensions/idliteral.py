"""The id-literal trap: the store keys a module on the first ``id: '…'`` literal in its file."""

from __future__ import annotations

import re

# An object-literal key ``id`` followed by a plain string literal; template strings with ${} are
# not literals and are skipped, as the loader would.
_ID_LITERAL = re.compile(
    r"""(?<![\w$.])["']?id["']?\s*:\s*(?P<q>['"`])(?P<value>(?:\\.|(?!(?P=q)).)*?)(?P=q)"""
)


def first_id_literal(source: str) -> str | None:
    """The value of the first ``id: '…'`` literal in ``source`` (comments included, as the store reads them)."""
    for match in _ID_LITERAL.finditer(source):
        value = match.group("value")
        if match.group("q") == "`" and "${" in value:
            continue
        return value
    return None


def id_literal_warning(source: str, defined_id: str | None) -> str | None:
    """A sentence when the first literal is missing or is not ``defined_id``; else None."""
    literal = first_id_literal(source)
    if literal is None:
        return "no id: '…' literal found; make the first literal in the file the extension's own id"
    if defined_id is not None and literal != defined_id:
        return (
            f"the first id: literal in the file is {literal!r} but the module defines {defined_id!r}; "
            "the store keys the module on the first literal, so make it the extension's own id"
        )
    return None
