"""Finding states and outcomes written as bare strings instead of the enum member that owns them."""

from __future__ import annotations

import ast
from collections.abc import Collection
from enum import Enum
from pathlib import Path

ENUM_BASES = {"TextChoices", "IntegerChoices", "StrEnum", "Enum"}
ROOT = Path(__file__).resolve().parents[1]


def enum_values(*enums: type[Enum]) -> set[str]:
    """The non-blank values of ``enums``: what a bare literal must not spell."""
    return {member.value for enum in enums for member in enum if member.value}


def bare_literals(source: str, watched: Collection[str]) -> list[tuple[int, str]]:
    """String constants equal to a watched value, outside enum bodies, docstrings, keys and subscripts."""
    tree = ast.parse(source)
    allowed: set[int] = set()
    for node in ast.walk(tree):
        bases = {
            getattr(base, "attr", getattr(base, "id", "")) for base in getattr(node, "bases", ())
        }
        if isinstance(node, ast.ClassDef) and bases & ENUM_BASES:
            allowed |= {id(n) for n in ast.walk(node)}  # the enum's own definition
        elif isinstance(node, ast.Dict):
            allowed |= {id(k) for k in node.keys if k is not None}  # a JSON key, not a state
        elif isinstance(node, ast.Subscript):
            allowed.add(id(node.slice))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            allowed.add(id(node.value))  # a docstring
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in watched
        and id(node) not in allowed
    )


def bare_literals_in(rooms: Collection[str], watched: Collection[str]) -> list[str]:
    """``path:line: 'value'`` for every bare literal in the rooms' modules (migrations aside)."""
    files = sorted(
        path
        for room in rooms
        for path in (ROOT / room).rglob("*.py")
        if "migrations" not in path.parts
    )
    assert len(files) > 5 * len(rooms)  # the scan sees the rooms
    return [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for path in files
        for line, value in bare_literals(path.read_text(), watched)
    ]
