"""Every error code is a member of its room's ``str`` enum, and no code means two things."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from enum import StrEnum
from pathlib import Path

import pytest

from extensions.codes import ExtensionCode, ExtensionError
from guardrails.codes import GuardrailCode, GuardrailError
from kernel.codes import KernelCode, KernelError
from processes.codes import ProcessCode, ProcessError
from records.codes import RecordError, RefusalCode
from records.rest.codes import ReadCode, ReadError
from sources.codes import SourceCode, SourceError
from turbobase.codes import EdgeCode

ROOMS = ("kernel", "extensions", "guardrails", "records", "sources", "processes")
ENUMS = (KernelCode, ExtensionCode, GuardrailCode, RefusalCode, ReadCode, SourceCode, ProcessCode)
# The top-level ``error`` of a body: its own enums, apart from the rejection codes above.
ERROR_ENUMS = (
    KernelError,
    ExtensionError,
    GuardrailError,
    RecordError,
    ReadError,
    SourceError,
    ProcessError,
    EdgeCode,
)
# A snake_case word is a code; a sentence under an ``error`` key is a message (the admin's forms).
CODE_SHAPE = re.compile(r"[a-z][a-z0-9_]*")
ROOT = Path(__file__).resolve().parents[2]


def _import_rooms() -> None:
    for room in (*ROOMS, "turbobase"):
        package = importlib.import_module(room)
        for module in pkgutil.walk_packages(package.__path__, prefix=f"{room}."):
            if _is_skipped(module.name):
                continue
            importlib.import_module(module.name)


def _is_skipped(name: str) -> bool:
    # The child runs isolated from the project; the gunicorn modules import gunicorn's arbiter.
    return ".migrations" in name or name.endswith(("sandbox_child", "gunicorn_conf", "__main__"))


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


def test_every_error_class_names_its_error_by_an_enum_member():
    from kernel.errors import TurbobaseError

    _import_rooms()
    classes = _subclasses(TurbobaseError) | {TurbobaseError}
    bare = sorted(
        f"{cls.__module__}.{cls.__qualname__}.error = {cls.__dict__['error']!r}"
        for cls in classes
        if "error" in cls.__dict__ and not isinstance(cls.__dict__["error"], ERROR_ENUMS)
    )
    assert bare == []
    named = {cls.__qualname__: cls.error for cls in classes}
    # The scan saw the classes it is about, each still answering its wire value.
    assert named["TurbobaseError"] == "error"
    assert named["SignInFailed"] == "invalid_credentials"
    assert named["InvalidQuery"] == "invalid_query"
    assert named["RunNotResumable"] == "process_run_not_resumable"
    assert named["SourceUnavailable"] == "source_unavailable"


def _room_files() -> list[Path]:
    return sorted(
        path
        for room in (*ROOMS, "turbobase")
        for path in (ROOT / room).rglob("*.py")
        if "migrations" not in path.parts and path.name != "sandbox_child.py"
    )


def test_no_error_body_spells_its_error_as_a_literal():
    found = []
    files = _room_files()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Dict):
                continue
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and key.value == "error"
                    and isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                    and CODE_SHAPE.fullmatch(value.value)
                ):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {value.value!r}")
    assert found == []
    assert len(files) > 100  # the scan read the rooms, not an empty tree


def test_no_error_value_is_defined_twice():
    values = [member.value for enum in ERROR_ENUMS for member in enum]
    assert sorted(v for v in set(values) if values.count(v) > 1) == []
    # Each is snake_case, as the seed's bodies spell them.
    assert [v for v in values if not CODE_SHAPE.fullmatch(v)] == []


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
