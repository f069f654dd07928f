"""The docs' generated tables: settings from the registry, codes from the enums, routes from urls.

A page marks where a table goes with a pair of comments, and only what is between them is written::

    <!-- generated: settings groups=slices,waits -->   (no groups= : every setting)
    <!-- end generated -->
    <!-- generated: codes -->   (every member of every room's codes enum)
    <!-- end generated -->
    <!-- generated: routes -->  (every /v1 route with the scope a token needs)
    <!-- end generated -->

``python -m tests.docs.tables`` rewrites every marked table in ``docs/`` and README.md from the
code; ``tests/docs/test_tables.py`` fails while a page differs from what this would write. So a
setting renamed, added or re-defaulted, or a code added, is a regeneration, never a hand edit.
"""

from __future__ import annotations

import ast
import enum
import importlib
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from guardrails.registry import SettingSpec

ROOT = Path(__file__).resolve().parents[2]
ROOMS = ("kernel", "extensions", "guardrails", "records", "sources", "processes", "turbobase")
MARKER = re.compile(
    r"(<!-- generated: (?P<kind>[a-z]+)(?P<args>[^>]*?) -->\n)(?P<body>.*?)(<!-- end generated -->)",
    re.DOTALL,
)


def pages() -> list[Path]:
    """README and every page under docs/ (the pages a table may live in)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


# --- settings -------------------------------------------------------------------------------


def _django() -> None:
    """Django set up (the registry and the URL configuration import models), once."""
    import django
    from django.conf import settings

    if not settings.configured:
        import os

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "turbobase.settings")
        django.setup()


def _default_shown(spec: SettingSpec) -> str:
    from guardrails.registry import SettingType

    if spec.type is SettingType.BOOLEAN:
        return "on" if spec.default else "off"
    if spec.type is SettingType.MILLISECONDS:
        return f"{spec.default:,} ms"
    if spec.type is SettingType.BYTES:
        return f"{spec.default:,} bytes"
    return f"{spec.default:,}"


def _bounds_shown(spec: SettingSpec) -> str:
    from guardrails.registry import SettingType

    return "—" if spec.type is SettingType.BOOLEAN else f"{spec.min:,} … {spec.max:,}"


def settings_table(groups: list[str] | None = None) -> str:
    """The registry's settings (of ``groups``, in the registry's order) as a Markdown table."""
    _django()
    from guardrails.registry import REGISTRY

    lines = [
        "| key | type | default | bounds | group | what it does |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for spec in REGISTRY.values():
        if groups and str(spec.group) not in groups:
            continue
        description = spec.description.replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| `{spec.key}` | {spec.type} | {_default_shown(spec)} | {_bounds_shown(spec)} "
            f"| {spec.group} | {description} |"
        )
    return "\n".join(lines) + "\n"


# --- error codes ----------------------------------------------------------------------------


def code_modules() -> list[Path]:
    """Every room's ``codes.py`` (and its packages' own, such as ``records/rest/codes.py``)."""
    return sorted(p for room in ROOMS for p in (ROOT / room).rglob("codes.py"))


def _comments(path: Path) -> dict[str, str]:
    """Member name → the comment on its line (or on the lines of its parenthesised value)."""
    text = path.read_text()
    lines = text.splitlines()
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            span = lines[node.lineno - 1 : (node.end_lineno or node.lineno)]
            notes = [line.split("  # ", 1)[1].strip() for line in span if "  # " in line]
            above = []  # else the comment block right above the member (its own, or its section's)
            row = node.lineno - 2
            while not notes and row >= 0 and lines[row].strip().startswith("#"):
                above.insert(0, lines[row].strip().lstrip("# ").strip())
                row -= 1
            found[node.targets[0].id] = " ".join(notes or above)
    return found


def code_enums() -> list[tuple[str, type[enum.Enum], dict[str, str]]]:
    """(module, enum, comments) for every str enum a codes module defines."""
    found = []
    for path in code_modules():
        module_name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        module = importlib.import_module(module_name)
        comments = _comments(path)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, enum.Enum)
                and issubclass(value, str)
                and value.__module__ == module_name
                and len(value)
            ):
                found.append((module_name, value, comments))
    return found


def all_codes() -> set[str]:
    return {str(member.value) for _, enum_cls, _ in code_enums() for member in enum_cls}


def codes_table() -> str:
    _django()
    lines = ["| code | enum | meaning |", "| --- | --- | --- |"]
    for module_name, enum_cls, comments in code_enums():
        for member in enum_cls:
            meaning = comments.get(member.name, "").replace("|", "\\|")
            lines.append(f"| `{member.value}` | `{module_name}.{enum_cls.__name__}` | {meaning} |")
    return "\n".join(lines) + "\n"


# --- routes -------------------------------------------------------------------------------


def _routes(patterns: list, prefix: str = "") -> list[tuple[str, type]]:
    found = []
    for pattern in patterns:
        if hasattr(pattern, "url_patterns"):
            found += _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            view = getattr(pattern.callback, "cls", None)
            if view is not None and getattr(view, "required_scopes", None):
                found.append((prefix + str(pattern.pattern), view))
    return found


def _route_shown(route: str) -> str:
    route = route.replace("^rest/(?P<resource>.*)$", "rest/<resource>")
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"<\1>", route)


def routes_table() -> str:
    """Every route that declares its scopes (``required_scopes``): method, path, scope, view."""
    _django()
    from django.urls import get_resolver

    lines = ["| method | path | token scope | view |", "| --- | --- | --- | --- |"]
    for route, view in _routes(get_resolver().url_patterns):
        for method, scope in view.required_scopes.items():
            scopes = " or ".join(f"`{s}`" for s in ((scope,) if isinstance(scope, str) else scope))
            lines.append(
                f"| {method.upper()} | `{_route_shown(route)}` | {scopes} "
                f"| `{view.__module__}.{view.__name__}` |"
            )
    return "\n".join(lines) + "\n"


# --- the pages ------------------------------------------------------------------------------


def table_for(kind: str, args: str) -> str:
    options = dict(part.split("=", 1) for part in args.split() if "=" in part)
    if kind == "settings":
        groups = options.get("groups")
        return settings_table([g.replace("_", " ") for g in groups.split(",")] if groups else None)
    if kind == "codes":
        return codes_table()
    if kind == "routes":
        return routes_table()
    raise ValueError(f"unknown generated table {kind!r}")


def page_generated(text: str) -> str:
    """``text`` with every marked table written afresh."""
    return MARKER.sub(
        lambda m: m.group(1) + table_for(m.group("kind"), m.group("args")) + m.group(5), text
    )


def main() -> int:
    changed = []
    for page in pages():
        text = page.read_text()
        fresh = page_generated(text)
        if fresh != text:
            page.write_text(fresh)
            changed.append(page.relative_to(ROOT))
    print("regenerated: " + (", ".join(map(str, changed)) or "nothing (every table is current)"))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
