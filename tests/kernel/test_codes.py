"""Every error code is a member of its room's ``str`` enum, and no code means two things."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from enum import StrEnum
from pathlib import Path

import pytest

from extensions.codes import ExtensionCode
from guardrails.codes import GuardrailCode
from kernel.codes import KernelCode
from processes.codes import ProcessCode
from records.codes import RefusalCode
from records.rest.codes import ReadCode
from sources.codes import SourceCode

ROOMS = ("kernel", "extensions", "guardrails", "records", "sources", "processes")
ENUMS = (KernelCode, ExtensionCode, GuardrailCode, RefusalCode, ReadCode, SourceCode, ProcessCode)
ROOT = Path(__file__).resolve().parents[2]


def _import_rooms() -> None:
    for room in ROOMS:
        package = importlib.import_module(room)
        for module in pkgutil.walk_packages(package.__path__, prefix=f"{room}."):
            if ".migrations" in module.name:
                continue
            importlib.import_module(module.name)


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def test_every_error_class_names_its_code_by_an_enum_member():
    from extensions.sandbox import SandboxError
    from extensions.transpile import TranspileError
    from kernel.errors import TurbobaseError

    _import_rooms()
    classes = (
        _subclasses(TurbobaseError)
        | _subclasses(SandboxError)
        | {TurbobaseError, SandboxError, TranspileError}
    )
    bare = sorted(
        f"{cls.__module__}.{cls.__qualname__} = {cls.__dict__['code']!r}"
        for cls in classes
        if cls.__module__.split(".")[0] in ROOMS
        and "code" in cls.__dict__
        and not isinstance(cls.__dict__["code"], StrEnum)
    )
    assert bare == []
    # And the check above saw the classes it is about (a rename must not make it vacuous).
    names = {cls.__qualname__ for cls in classes}
    assert {
        "RunNotResumable",
        "SourceRefused",
        "SandboxTimeout",
        "InvalidQuery",
        "ScheduleInvalid",
    } <= names


def test_no_code_is_defined_twice():
    values = [member.value for enum in ENUMS for member in enum]
    assert sorted(v for v in set(values) if values.count(v) > 1) == []


@pytest.mark.parametrize(
    ("member", "spelling"),
    [
        (RefusalCode.STEP_ADDRESS_UNRESOLVED, "STEP_ADDRESS_UNRESOLVED"),
        (RefusalCode.SOURCE_APPLIED_UNLINKED, "SOURCE_APPLIED_UNLINKED"),
        (RefusalCode.SOURCE_AWAITING_CONFIRMATION, "SOURCE_AWAITING_CONFIRMATION"),
        (RefusalCode.RECORD_REFERENCED, "RECORD_REFERENCED"),
        (RefusalCode.NOT_SETTLE_CONFLICT, "NOT_SETTLE_CONFLICT"),
        (RefusalCode.MANDATORY_FIELD_MISSING, "MANDATORY_FIELD_MISSING"),
        (RefusalCode.ATOMIC_WRITE_REQUIRED, "ATOMIC_WRITE_REQUIRED"),
        (RefusalCode.WRITE_SETTLE_CONFLICT, "write_settle_conflict"),
        (ExtensionCode.EXTENSION_ID_MISMATCH, "extension_id_mismatch"),
    ],
)
def test_the_seeds_codes_keep_the_seeds_spelling(member, spelling):
    assert member == spelling


def test_the_sandbox_child_sends_codes_as_extension_code_members():
    """The child modules name every code a ``Fault`` carries by an ``ExtensionCode`` member."""
    calls = [
        node
        for name in ("sandbox_child.py", "sandbox_faults.py")
        for node in ast.walk(ast.parse((ROOT / "extensions" / name).read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Fault" and node.args
    ]
    assert len(calls) > 10  # the scan found the calls it is about
    bare = [ast.unparse(call) for call in calls if isinstance(call.args[0], ast.Constant)]
    assert bare == []
    named = {ast.unparse(call.args[0]) for call in calls if isinstance(call.args[0], ast.Attribute)}
    assert "ExtensionCode.SANDBOX_TIMEOUT" in named
    assert {n.split(".")[1] for n in named if n.startswith("ExtensionCode.")} <= {
        member.name for member in ExtensionCode
    }
