"""Extension kinds register their contract validators here (from their room's ``ready()``).

The extensions room knows nothing of records or processes: a validator receives the described
default export and raises a ``TurbobaseError`` naming the field, or returns the definition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Validator = Callable[[Any], Any]

_validators: dict[str, Validator] = {}


def kind_register(kind: str, validator: Validator) -> None:
    _validators[kind] = validator


def kind_validator(kind: str) -> Validator | None:
    return _validators.get(kind)


def kinds_known() -> list[str]:
    return sorted(_validators)


# A kind's declarations for the deploy's type check: (definition, sources, entry) → the
# declarations text, or None to skip the check (its setting is off).
DeclarationsProvider = Callable[[Any, Mapping[str, str], str], "str | None"]

_declarations: dict[str, DeclarationsProvider] = {}


def typecheck_register(kind: str, provider: DeclarationsProvider) -> None:
    _declarations[kind] = provider


def typecheck_provider(kind: str) -> DeclarationsProvider | None:
    return _declarations.get(kind)
