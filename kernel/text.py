"""Text that came from outside: what may be stored, and how long it may be.

Two facts every room must respect, kept here so there is one answer:

- PostgreSQL text cannot hold NUL (U+0000), and nothing encodes a lone UTF-16 surrogate
  (U+D800–U+DFFF) as UTF-8 — not psycopg, not SQLite's driver, not the JSON renderer. Input
  carrying either is refused by name (``text_problem``); text we only report or log (a hook's
  rejection, a trail row) is made storable instead (``text_clean``).
- Text an extension or a caller controls is bounded before it is answered, stored or logged
  (``text_truncate``), and says so: ``… [truncated 12345 chars]``.

Pure Python on purpose: the sandbox parent (no Django) uses it too.
"""

from __future__ import annotations

import re

# Documented in README ("Limits on input and output"); change both together.
MESSAGE_MAX_CHARS = 2_000  # a rejection's message, answered and stored
CODE_MAX_CHARS = 64  # a rejection's code (the trail's and the ledger's column)
FIELD_MAX_CHARS = 128  # a rejection's field (the trail's column)
LOG_LINE_MAX_CHARS = 8_192  # one ctx.log line reaching the server or worker log
LOG_LINES_PER_CALL = 100  # ctx.log lines one sandbox call may write; the rest are counted, dropped

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text, or None when it can."""
    found = _UNSTORABLE.search(value)
    if found is None:
        return None
    char = found.group()
    if char == "\x00":
        return "contains a NUL character (U+0000), which text cannot hold"
    return f"contains a lone surrogate (U+{ord(char):04X}), which is not valid Unicode"


def text_truncate(value: str, limit: int) -> str:
    """``value`` cut to at most ``limit`` characters, marked ``… [truncated N chars]`` when cut.

    The marker counts the characters left out and fits inside ``limit``, so a column of that
    width always holds the result.
    """
    if len(value) <= limit:
        return value
    kept = limit
    while True:
        marker = f"… [truncated {len(value) - kept} chars]"
        if kept + len(marker) <= limit or kept == 0:
            break
        kept = max(0, limit - len(marker))
    if kept + len(marker) > limit:  # a limit too small even for the marker
        return value[:limit]
    return value[:kept] + marker


def text_clean(value: object, limit: int) -> str:
    """``value`` (as text) made storable (NUL and lone surrogates become U+FFFD) and cut to
    ``limit``. A string that needs neither is returned as it is (an enum member stays one)."""
    if not isinstance(value, str):
        value = str(value)
    if len(value) <= limit and _UNSTORABLE.search(value) is None:
        return value
    return text_truncate(_UNSTORABLE.sub(REPLACEMENT, value), limit)
