"""Error codes: every code the docs name exists in the code, and every enum code is in docs/api.md.

A code the docs name is a backticked token that is a code by its look — UPPER_SNAKE with at least
one ``_`` (``INVALID_FILTER``), or a lower_snake token right after an HTTP status (``409
`idempotency_key_reused```) or as an ``"error":"…"`` value. It must be a member of a room's
codes enum or, for the ``error`` values and the names of settings and variables that share the
look, a string literal in the rooms' source.
"""

from __future__ import annotations

import re

import pytest

from tests.docs.tables import ROOMS, ROOT, all_codes, pages

UPPER = re.compile(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`")
AFTER_STATUS = re.compile(r"\b[1-5]\d\d `([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`")
ERROR_VALUE = re.compile(r'"error":\s*"([a-z][a-z0-9_]+)"')


# Variables the docs name that belong to other programs, not to Turbobase's source.
OUTSIDE = {
    "FORWARDED_ALLOW_IPS",  # gunicorn's own: trust a TLS proxy's X-Forwarded-Proto
    "ITIMER_REAL",  # the OS interval timer django-q2 uses (docs/sandbox.md)
    "permission_denied",  # DRF's own code, answered for a session's missing CSRF token
}


def source_strings() -> set[str]:
    """Every identifier-looking word in the rooms, the demo, the Makefile and CI's scripts."""
    paths = [p for room in (*ROOMS, "demo", ".ci") for p in (ROOT / room).rglob("*") if p.is_file()]
    words: set[str] = set(OUTSIDE)
    for path in [*paths, ROOT / "Makefile"]:
        if path.suffix in {".py", ".json", ".ts", ""} and "migrations" not in path.parts:
            words |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text(errors="replace")))
    return words


def codes_named_in_docs() -> dict[str, set[str]]:
    named: dict[str, set[str]] = {}
    for page in pages():
        text = page.read_text()
        for pattern in (UPPER, AFTER_STATUS, ERROR_VALUE):
            for code in pattern.findall(text):
                named.setdefault(code, set()).add(str(page.relative_to(ROOT)))
    return named


@pytest.mark.django_db
def test_every_code_in_the_enums_is_in_the_api_page():
    api = (ROOT / "docs" / "api.md").read_text()
    missing = sorted(code for code in all_codes() if f"`{code}`" not in api)
    assert not missing, f"codes missing from docs/api.md (python -m tests.docs.tables): {missing}"


@pytest.mark.django_db
def test_every_code_the_docs_name_exists_in_the_code():
    known = all_codes() | source_strings()
    unknown = {
        code: sorted(where) for code, where in codes_named_in_docs().items() if code not in known
    }
    assert not unknown, f"the docs name codes the code does not have: {unknown}"


def test_the_check_would_catch_a_made_up_code():
    text = "a refusal: 409 `no_such_code_anywhere` or `MADE_UP_CODE_X`"
    found = {*AFTER_STATUS.findall(text), *UPPER.findall(text)}
    assert found == {"no_such_code_anywhere", "MADE_UP_CODE_X"}
    assert not found & source_strings()
