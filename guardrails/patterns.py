"""Settings declared once for many names: ``sources.<name>.max_per_second`` for every source.

A pattern is a ``SettingSpec`` whose key holds ``<name>``; ``pattern_spec`` turns a concrete key
(``sources.erp.max_per_second``) into the spec of that key, so reading, checking, storing and
auditing it is the same code as for any fixed setting. Which names exist is known to a higher
room (the catalog's sources), so that room registers a provider (``pattern_names_register``) and
guardrails never imports it; a name with a stored override is listed even when no provider knows it.

A pattern's default is 0, which reads as "no limit": the value an operator may *set* is still a
positive number (``min`` 1); clearing the override is how a limit goes back to none.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable

from guardrails.setting_spec import SettingGroup, SettingSpec, SettingType

NAME = "<name>"
_NAME_RE = r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}"

PATTERNS: tuple[SettingSpec, ...] = (
    SettingSpec(
        f"sources.{NAME}.max_per_second",
        SettingType.INTEGER,
        0,
        SettingGroup.SOURCES,
        "Writes sent to this source per second, across every worker (0, the default: no limit).",
        min=1,
        max=100_000,
    ),
    SettingSpec(
        f"sources.{NAME}.max_in_flight",
        SettingType.INTEGER,
        0,
        SettingGroup.SOURCES,
        "Writes to this source awaiting its answer at once, across every worker (0, the "
        "default: no limit).",
        min=1,
        max=10_000,
    ),
)

_MATCHERS = tuple(
    (re.compile(re.escape(spec.key).replace(re.escape(NAME), f"({_NAME_RE})")), spec)
    for spec in PATTERNS
)
_providers: dict[str, Callable[[], Iterable[str]]] = {}


def pattern_names_register(prefix: str, provider: Callable[[], Iterable[str]]) -> None:
    """Let ``provider`` name the ``<name>``s of the patterns starting ``prefix.`` (from ``ready()``)."""
    _providers[prefix] = provider


def pattern_spec(key: str) -> SettingSpec | None:
    """The spec of a concrete key of a pattern (its key filled in), or None."""
    for matcher, spec in _MATCHERS:
        if matcher.fullmatch(key):
            return dataclasses.replace(spec, key=key)
    return None


def pattern_key(pattern: str, name: str) -> str:
    """``pattern_key("sources.<name>.max_per_second", "erp")`` → ``sources.erp.max_per_second``."""
    return pattern.replace(NAME, name)


def pattern_specs(stored_keys: Iterable[str] = ()) -> list[SettingSpec]:
    """Every concrete spec to list: each pattern for each name its provider knows, plus stored keys."""
    specs: dict[str, SettingSpec] = {}
    for pattern in PATTERNS:
        provider = _providers.get(pattern.key.split(".", 1)[0])
        for name in sorted(provider() if provider else ()):
            key = pattern_key(pattern.key, name)
            if pattern_spec(key) is not None:  # a name the pattern cannot hold is not listed
                specs[key] = dataclasses.replace(pattern, key=key)
    for key in stored_keys:
        spec = pattern_spec(key)
        if spec is not None:
            specs.setdefault(key, spec)
    return sorted(specs.values(), key=lambda spec: spec.key)
