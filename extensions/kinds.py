"""Extension kinds register their contract validators here (from their room's ``ready()``).

The extensions room knows nothing of records or processes: a validator receives the described
default export and raises a ``TurbobaseError`` naming the field, or returns the definition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Validator = Callable[[Any], Any]

_validators: dict[str, Validator] = {}


def kind_register(kind: str, validator: Validator) -> None:
    _validators[kind] = validator


def kind_validator(kind: str) -> Validator | None:
    return _validators.get(kind)


def kinds_known() -> list[str]:
    return sorted(_validators)
