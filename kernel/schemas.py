"""The JSON Schemas authors write — a process's ``input``, an AI step's ``ai.schema``, a catalog's
fields — checked and applied here, and nowhere else.

A schema is one document. Nothing is ever fetched on its behalf: every validator is built on a
registry whose ``retrieve`` refuses, whatever a ``$ref`` or an ``$id`` says. (jsonschema's default
registry ``urlopen``s any reference it does not know, ``file://`` included and with no time limit:
a file's content ended up in validation messages, and a host that never answers held a thread.)

``schema_problem`` is the deploy's check, naming where inside the schema it fails: a ``$ref``
(or ``$dynamicRef``) must be ``#``, a ``#/…`` pointer or a ``#anchor`` of this document and point
at a schema in it; ``$id`` and ``$schema`` belong at the top only (inside, they make a part another
document or another dialect); and no chain of references may come back to where it started
without looking inside the value (``{"$ref": "#"}``), because validating would never end.

``schema_errors`` applies a schema and answers its validation errors, or raises
``SchemaUnusable`` — never anything else — for a schema stored before these checks existed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012

from kernel.codes import KernelCode, KernelError
from kernel.errors import Refusal


def _retrieve_refused(uri: str) -> Resource:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


# jsonschema adds the dialects' own meta-schemas (in memory) to this; nothing else ever resolves.
NOTHING_FETCHED: Registry = Registry(retrieve=_retrieve_refused)  # type: ignore[call-arg]

# Where 2020-12 applies subschemas. In place: to the same value (a cycle through these alone
# never ends). Descending: to a part of the value. Unapplied: reached only through a $ref.
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas",)
_DESCENDING_ONE = (
    "additionalProperties",
    "contains",
    "contentSchema",
    "items",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_DESCENDING_LIST = ("prefixItems",)
_DESCENDING_MAP = ("properties", "patternProperties")
_UNAPPLIED_MAP = ("$defs", "definitions")
_REF_KEYS = ("$ref", "$dynamicRef")
_TOP_ONLY = {
    "$id": "$id inside a schema makes that part another document; name the parts of one "
    "document in $defs and refer to them as '#/$defs/…'",
    "$schema": "$schema inside a schema switches that part to another dialect; this instance "
    "checks every schema as JSON Schema 2020-12",
}


@dataclass(frozen=True)
class SchemaProblem:
    """Why a schema cannot be used, and where inside it (``properties.x.$ref``; ``""``: all)."""

    field: str
    message: str

    def at(self, prefix: str) -> str:
        """The field named from outside the schema: ``input`` + ``.properties.x.$ref``."""
        return f"{prefix}.{self.field}" if self.field else prefix


class SchemaUnusable(Refusal):
    """The schema cannot be applied: it refers outside itself, to nothing, or round in a circle."""

    error: str = KernelError.SCHEMA_UNUSABLE
    code = KernelCode.SCHEMA_UNUSABLE

    def __init__(self, problem: SchemaProblem) -> None:
        super().__init__(problem.message, field=problem.field)
        self.problem = problem


def schema_validator(schema: Any) -> Draft202012Validator:
    """A validator of ``schema`` that fetches nothing; ``SchemaUnusable`` if it cannot be built."""
    try:
        return Draft202012Validator(schema, registry=NOTHING_FETCHED)
    except Exception as exc:  # not an object or a boolean: the schema's fault, said by name
        raise SchemaUnusable(_problem_of(schema, exc)) from exc


def schema_errors(
    validator: Draft202012Validator, instance: Any, *, first_only: bool = False
) -> list[ValidationError]:
    """Where ``instance`` does not fit (all, or ``first_only``); ``SchemaUnusable`` when the schema
    itself fails while being applied — a stored schema from before ``schema_problem``."""
    try:
        errors = validator.iter_errors(instance)
        if first_only:
            first = next(iter(errors), None)
            return [] if first is None else [first]
        return list(errors)
    except Exception as exc:  # RecursionError, an unresolvable $ref, an unknown type: the schema's
        raise SchemaUnusable(_problem_of(validator.schema, exc)) from exc


def _problem_of(schema: Any, exc: Exception) -> SchemaProblem:
    try:
        problem = schema_problem(schema)
    except Exception:  # naming the problem is a courtesy: the refusal stands without it
        problem = None
    if problem is not None:
        return problem
    return SchemaProblem("", f"applying it failed ({type(exc).__name__})")


def schema_problem(schema: Any) -> SchemaProblem | None:
    """The first reason ``schema`` cannot be used as one document, named by where; None if none."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return SchemaProblem(_path(exc.path), f"is not a valid JSON Schema: {exc.message}")
    except RecursionError:
        return SchemaProblem("", "is nested too deeply to check")
    if isinstance(schema, bool):
        return None
    try:
        return _Walk(schema).problem()
    except _Found as found:
        return found.problem


def _join(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key


def _path(parts: Iterable[Any]) -> str:
    at = ""
    for part in parts:
        at = f"{at}[{part}]" if isinstance(part, int) else _join(at, str(part))
    return at


def _locations(root: Any) -> dict[int, str]:
    """Every object and array of the document by identity → where it is (for naming)."""
    where: dict[int, str] = {}
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, at = stack.pop()
        if isinstance(node, dict):
            where[id(node)] = at
            stack.extend((value, _join(at, str(key))) for key, value in node.items())
        elif isinstance(node, list):
            where[id(node)] = at
            stack.extend((value, f"{at}[{index}]") for index, value in enumerate(node))
    return where


def _subschemas(node: dict) -> Iterator[tuple[Any, bool]]:
    """Each subschema ``node`` holds, and whether it applies to the same value (in place)."""
    for key in _IN_PLACE_ONE + _DESCENDING_ONE:
        if key in node:
            yield node[key], key in _IN_PLACE_ONE
    for key in _IN_PLACE_LIST + _DESCENDING_LIST:
        if isinstance(node.get(key), list):
            yield from ((sub, key in _IN_PLACE_LIST) for sub in node[key])
    for key in _IN_PLACE_MAP + _DESCENDING_MAP + _UNAPPLIED_MAP:
        if isinstance(node.get(key), dict):
            yield from ((sub, key in _IN_PLACE_MAP) for sub in node[key].values())


class _Found(Exception):
    def __init__(self, problem: SchemaProblem) -> None:
        self.problem = problem


class _Walk:
    """Every schema the validator may reach from the root — through its keywords and through its
    references — checked once; then the references applied in place, searched for a cycle."""

    def __init__(self, root: dict) -> None:
        self.root = root
        self.where = _locations(root)
        self.resolver = NOTHING_FETCHED.resolver_with_root(DRAFT202012.create_resource(root))
        self.order: list[int] = []  # the schemas seen, in the order found
        # schema → the schemas it applies to the same value, each with the $ref field on the way
        self.in_place: dict[int, list[tuple[int, str | None]]] = {}
        self.refs: dict[str, str] = {}  # a $ref field → its value

    def problem(self) -> SchemaProblem | None:
        queue: deque[dict] = deque([self.root])
        while queue:
            node = queue.popleft()
            if id(node) in self.in_place:
                continue
            self.order.append(id(node))
            edges = self.in_place[id(node)] = []
            at = self.where[id(node)]
            for key, message in _TOP_ONLY.items():
                if key in node and node is not self.root:
                    raise _Found(SchemaProblem(_join(at, key), message))
            for key in _REF_KEYS:
                if key in node:
                    field = _join(at, key)
                    target = self._target(node[key], field)
                    if target is not None:
                        edges.append((id(target), field))
                        queue.append(target)
            for sub, in_place in _subschemas(node):
                if isinstance(sub, dict):
                    if in_place:
                        edges.append((id(sub), None))
                    queue.append(sub)
        return self._cycle()

    def _target(self, ref: Any, field: str) -> dict | None:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise _Found(
                SchemaProblem(
                    field,
                    f"{ref!r} is not a reference inside this schema: a schema may refer only to "
                    "its own parts ('#', '#/$defs/…', '#anchor'); nothing is read from a file or "
                    "the network",
                )
            )
        try:
            target = self.resolver.lookup(ref).contents
        except Unresolvable:
            raise _Found(
                SchemaProblem(field, f"{ref!r} points at nothing in this schema")
            ) from None
        if isinstance(target, bool):
            return None
        if not isinstance(target, dict) or id(target) not in self.where:
            raise _Found(
                SchemaProblem(field, f"{ref!r} points at something that is not a JSON Schema")
            )
        try:
            Draft202012Validator.check_schema(target)
        except SchemaError as exc:
            raise _Found(
                SchemaProblem(
                    field,
                    f"{ref!r} points at something that is not a valid JSON Schema: {exc.message}",
                )
            ) from None
        self.refs[field] = ref
        return target

    def _cycle(self) -> SchemaProblem | None:
        """A chain of in-place applications back to its start (depth first, without recursion)."""
        state: dict[int, bool] = {}  # True: on the current path; False: done
        for start in self.order:
            if start in state:
                continue
            path: list[tuple[int, str | None]] = [(start, None)]
            pending = [iter(self.in_place[start])]
            state[start] = True
            while pending:
                edge = next(pending[-1], None)
                if edge is None:
                    state[path.pop()[0]] = False
                    pending.pop()
                    continue
                node, field = edge
                if state.get(node) is True:
                    index = next(i for i, (seen, _) in enumerate(path) if seen == node)
                    fields = [f for _, f in path[index + 1 :]] + [field]
                    # Keywords nest, so every cycle passes through at least one reference.
                    ref_field = next(f for f in fields if f is not None)
                    return SchemaProblem(
                        ref_field,
                        f"{self.refs[ref_field]!r} leads back to itself without looking inside "
                        "the value: validating against it would never end",
                    )
                if node not in state:
                    state[node] = True
                    path.append((node, field))
                    pending.append(iter(self.in_place[node]))
        return None
