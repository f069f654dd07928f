"""What one instance setting is: its type, its group, its bounds, and the checks of its values.

A value is always an integer in storage; ``boolean`` settings hold 0 or 1 and ``milliseconds``
settings a duration. ``SettingSpec`` checks every value and names the key it refuses: ``parse`` a
JSON value (strictly typed), ``parse_text`` an operator's text, ``check`` a stored value from
Python code. The declarations themselves are ``guardrails.registry``'s table.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any

from guardrails.codes import GuardrailCode, GuardrailError
from kernel.errors import InvalidRequest

_INT_MAX = 2**31 - 1  # every value fits a 32-bit integer column and a JavaScript number


class SettingType(enum.StrEnum):
    INTEGER = "integer"
    BOOLEAN = "boolean"
    MILLISECONDS = "milliseconds"
    BYTES = "bytes"


class SettingGroup(enum.StrEnum):
    DELETE_CAPS = "delete caps"
    ROLLBACK_CAPS = "rollback caps"
    SLICES = "slices"
    WAITS = "waits"
    RUN_CEILINGS = "per-run ceilings"
    READS = "reads"
    HOOKS = "hooks"
    SOURCES = "sources"
    SWITCHES = "switches"
    STEERING = "steering"
    HISTORY = "history"


class SettingInvalid(InvalidRequest):
    """That value is not valid for that setting."""

    error = GuardrailError.INVALID_SETTING
    code = GuardrailCode.INVALID_SETTING


@dataclass(frozen=True)
class SettingSpec:
    key: str  # a SettingKey in the registry; a pattern's concrete key (guardrails.patterns)
    type: SettingType
    default: int
    group: SettingGroup
    description: str
    min: int = 0
    max: int = _INT_MAX

    def parse(self, raw: Any) -> int:
        """The stored integer for a JSON value (the API), or ``SettingInvalid`` naming the key.

        Strict: a boolean setting takes ``true``/``false`` only; every other setting a JSON
        integer only — not a boolean, not text (``"10"``), not a number with a point (``10.0``).
        """
        if self.type is SettingType.BOOLEAN:
            if not isinstance(raw, bool):
                raise self._invalid(f"must be true or false, not {_shown_raw(raw)}")
            return int(raw)
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise self._invalid(f"must be a whole number (a JSON integer), not {_shown_raw(raw)}")
        if not self.min <= raw <= self.max:
            raise self._invalid(f"must be between {self.min} and {self.max}")
        return raw

    def parse_text(self, text: str) -> int:
        """The stored integer for an operator's text (the admin form): ASCII digits with an
        optional leading minus (no ``_``, ``,``, ``+`` or exponent), or ``true``/``false``."""
        if self.type is SettingType.BOOLEAN:
            return self.parse({"true": True, "false": False}.get(text, text))
        if len(text) > 12 or not _WHOLE_NUMBER.fullmatch(text):
            raise self._invalid(f"must be a whole number, not {text!r:.40}")
        return self.parse(int(text))

    def check(self, value: int) -> int:
        """A value already in its stored form, from Python code (``setting_set``): an int, for a
        boolean 0 or 1 (or a bool). Text is refused here too."""
        if self.type is SettingType.BOOLEAN and type(value) is int and value in (0, 1):
            return value
        return self.parse(value)

    def _invalid(self, reason: str) -> SettingInvalid:
        return SettingInvalid(f"{self.key} {reason}", field=self.key, key=self.key)


_WHOLE_NUMBER = re.compile(r"-?[0-9]+")


def _shown_raw(raw: Any) -> str:
    """What a refused value was, in JSON's words (the message names what came, not just what is due)."""
    if isinstance(raw, str):
        return f"the text {raw!r:.40}"
    if isinstance(raw, bool) or raw is None:
        return {True: "true", False: "false", None: "null"}[raw]
    if isinstance(raw, int | float):
        return f"{raw!r:.40}"
    if isinstance(raw, list | dict):
        return "a list" if isinstance(raw, list) else "an object"
    return type(raw).__name__
