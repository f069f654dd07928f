"""Deploy and remove extensions: the module store's write side.

A deploy folds the entry's siblings, transpiles every file (in a compiler child process, within
the deploy's size and compile-time limits: ``extensions.transpile``), evaluates the bundle in a
sandbox child exactly as the loader will (``extensions.lint.bundle_load``; never in the request thread,
under a CPU cap), reads the kind the SDK branded the default export with, validates it with that
kind's registered validator, checks the id-literal trap, and only then writes — one transaction
for the module row, the new version row and the ``extension_deployed`` signal. Every refusal
names its field (or import specifier) and stores nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from extensions.codes import ExtensionCode
from extensions.errors import (
    ConduitNotSupported,
    ExtensionIdMismatch,
    ExtensionImportRefused,
    ExtensionInvalid,
    ExtensionNotFound,
    ExtensionTooLarge,
)
from extensions.idliteral import first_id_literal
from extensions.kinds import kind_validator, kinds_known, typecheck_provider
from extensions.lint import (
    Bundle,
    BundleInvalid,
    LintReport,
    bundle_compile,
    bundle_evaluate,
    lint_bundle,
)
from extensions.models import DeployOutcome, ExtensionModule, ExtensionStatus, ExtensionVersion
from extensions.sandbox import LoadedModule, SandboxError, SandboxLimits
from extensions.siblings import SiblingImportRefused
from extensions.signals import extension_deployed, extension_removing
from extensions.store import store_forget
from extensions.transpile import (
    CompileBudget,
    CompileLimitExceeded,
    TranspileError,
)
from extensions.typecheck import typecheck
from kernel.deployment import deploy_compile_ms, deploy_cpu_ms, deploy_memory_mb

MAX_ID_CHARS = 200  # ExtensionModule.id


class ExtensionSyntaxInvalid(ExtensionInvalid):
    """The extension's source does not parse."""

    code = ExtensionCode.EXTENSION_SYNTAX_ERROR


class ExtensionLoadFailed(ExtensionInvalid):
    """Evaluating the extension in the sandbox failed; ``code`` is the sandbox's own."""

    http_status = 422
    code = ExtensionCode.SANDBOX_ERROR


class ExtensionTypeError(ExtensionInvalid):
    """A process does not fit the declarations: an undeclared, protected or mistyped field in a
    build, or a ``ctx.input``/``ctx.row`` property that does not exist."""

    http_status = 422
    code = ExtensionCode.EXTENSION_TYPE_ERROR


@dataclass(frozen=True)
class DeployResult:
    """What a deploy stored, and whether it replaced an earlier version."""

    id: str
    kind: str
    version: int
    outcome: DeployOutcome
    status: str = ExtensionStatus.ACTIVE


def deploy_limits() -> SandboxLimits:
    """The sandbox budget one deploy (or API lint) evaluation gets, read at call time."""
    cpu_ms = deploy_cpu_ms()
    return SandboxLimits(
        call_budget_ms=cpu_ms,
        slice_budget_ms=cpu_ms * 2,
        memory_mb=deploy_memory_mb(),
    )


def deploy_compile_budget() -> CompileBudget:
    """The compile time one deploy (or API lint) gets, every file together, read at call time."""
    return CompileBudget(deploy_compile_ms())


@contextmanager
def _refusals(entry: Any) -> Iterator[None]:
    """Turn the pure layers' failures into the domain refusals the API renders; a sandbox
    failure with no line of its own (a timeout) names the entry file."""
    try:
        yield
    except BundleInvalid as exc:
        raise ExtensionInvalid(exc.message, field=exc.field) from exc
    except SiblingImportRefused as exc:
        raise ExtensionImportRefused(exc.message, field=exc.field) from exc
    except CompileLimitExceeded as exc:
        raise ExtensionTooLarge(exc.message, field=exc.field, limit=exc.limit) from exc
    except TranspileError as exc:
        first = exc.diagnostics[0] if exc.diagnostics else None
        where = f"{first.file}:{first.line}:{first.column}" if first else None
        raise ExtensionSyntaxInvalid(exc.message, field=where) from exc
    except SandboxError as exc:
        where = str(exc.location) if exc.location is not None else str(entry)
        raise ExtensionLoadFailed(f"{exc.code}: {exc}", code=exc.code, field=where) from exc


def extension_evaluate(*, entry: Any, files: Any) -> tuple[Bundle, LoadedModule]:
    """Compile the bundle and evaluate it in a sandbox child, with refusals mapped."""
    with _refusals(entry):
        bundle = bundle_compile(entry=entry, files=files, budget=deploy_compile_budget())
        loaded = bundle_evaluate(bundle, limits=deploy_limits())
    return bundle, loaded


def extension_lint(*, entry: Any, files: Any) -> LintReport:
    """``POST /v1/extensions/lint``: the offline checks, evaluated in the sandbox child."""
    bundle, loaded = extension_evaluate(entry=entry, files=files)
    return lint_bundle(bundle, loaded=loaded)


def _definition_check(loaded: LoadedModule) -> tuple[str, str, Any]:
    kind = loaded.kind
    if kind == "conduit":
        raise ConduitNotSupported(
            "conduits are not supported on this instance yet; deploy processes (defineProcess) "
            "and hooks (defineHook)",
            field="default",
        )
    if kind is None:
        raise ExtensionInvalid(
            "the default export must be defineProcess({...}) or defineHook({...}) from "
            "@turbobase/extensions",
            field="default",
        )
    validator = kind_validator(kind)
    if validator is None:
        known = ", ".join(kinds_known()) or "none"
        raise ExtensionInvalid(
            f"extensions of kind {kind!r} cannot be deployed here (known: {known})", field="default"
        )
    definition = validator(loaded.definition)
    module_id = definition.get("id") if isinstance(definition, dict) else None
    if not isinstance(module_id, str) or not module_id.strip() or len(module_id) > MAX_ID_CHARS:
        raise ExtensionInvalid(
            f"id is required: a string of at most {MAX_ID_CHARS} characters", field="id"
        )
    return kind, module_id, definition


def _id_literal_check(bundle: Bundle, module_id: str) -> None:
    literal = first_id_literal(bundle.sources[bundle.entry])
    if literal == module_id:
        return
    read = "no id: '…' literal" if literal is None else f"the literal {literal!r}"
    raise ExtensionIdMismatch(
        f"the store keys a module on the first id: literal in {bundle.entry}: it read {read} but the "
        f"module defines {module_id!r}; make the first id: literal the module's own id",
        field="id",
        literal=literal,
        id=module_id,
    )


def _type_check(bundle: Bundle, kind: str, definition: Any) -> None:
    """Refuse a module with type errors against its kind's declarations (when it has any)."""
    provider = typecheck_provider(kind)
    declarations = provider(definition, bundle.sources, bundle.entry) if provider else None
    if declarations is None:
        return
    with _refusals(bundle.entry):
        problems = typecheck(
            bundle.sources,
            declarations=declarations,
            entry=bundle.entry,
            budget=deploy_compile_budget(),
        )
    if problems:
        first = problems[0]
        raise ExtensionTypeError(
            "; ".join(str(p) for p in problems[:5]),
            field=f"{first.file}:{first.line}:{first.column}",
            problems=[p.as_dict() for p in problems],
        )


@dataclass(frozen=True)
class PreparedExtension:
    """One extension that passed every deploy check and is ready to store."""

    bundle: Bundle
    kind: str
    module_id: str
    definition: Any


def extension_prepare(*, entry: Any, files: Any) -> PreparedExtension:
    """Every check ``extension_deploy`` makes, storing nothing (a bundle plan runs it per module)."""
    bundle, loaded = extension_evaluate(entry=entry, files=files)
    kind, module_id, definition = _definition_check(loaded)
    _id_literal_check(bundle, module_id)
    _type_check(bundle, kind, definition)
    return PreparedExtension(bundle=bundle, kind=kind, module_id=module_id, definition=definition)


def extension_store(prepared: PreparedExtension, *, by: Any) -> DeployResult:
    """Store a prepared extension as a new version (the second half of ``extension_deploy``)."""
    args = {
        "kind": prepared.kind,
        "module_id": prepared.module_id,
        "definition": prepared.definition,
        "by": by,
    }
    try:
        result = _store(prepared.bundle, **args)
    except IntegrityError:
        # Two first deploys of one new id raced to create it; the loser stores on top.
        result = _store(prepared.bundle, **args)
    store_forget()
    transaction.on_commit(store_forget)
    return result


def extension_deploy(*, entry: Any, files: Any, by: Any) -> DeployResult:
    """Validate and store one extension as a new version; see the module docstring."""
    return extension_store(extension_prepare(entry=entry, files=files), by=by)


def _store(bundle: Bundle, *, kind: str, module_id: str, definition: Any, by: Any) -> DeployResult:
    with transaction.atomic():
        module = ExtensionModule.objects.select_for_update().filter(pk=module_id).first()
        is_replacing = module is not None and module.status == ExtensionStatus.ACTIVE
        if module is not None and is_replacing and module.kind != kind:
            raise ExtensionInvalid(
                f"{module_id!r} is deployed as a {module.kind}; remove it before deploying a {kind} "
                "under that id",
                field="id",
            )
        last = ExtensionVersion.objects.filter(module_id=module_id).aggregate(last=Max("version"))[
            "last"
        ]
        version = (last or 0) + 1
        if module is None:
            module = ExtensionModule.objects.create(
                id=module_id, kind=kind, version=version, definition=definition
            )
        else:
            module.kind, module.version, module.definition = kind, version, definition
            module.status = ExtensionStatus.ACTIVE
            module.save(update_fields=["kind", "version", "definition", "status", "updated_at"])
        ExtensionVersion.objects.create(
            module=module,
            version=version,
            entry=bundle.entry,
            source=bundle.sources,
            compiled=bundle.compiled_json(),
            definition=definition,
            sha256=bundle.sha256,
            deployed_by=by if getattr(by, "pk", None) else None,
        )
        outcome = DeployOutcome.DUPLICATE if is_replacing else DeployOutcome.WRITTEN
        extension_deployed.send(sender=ExtensionModule, module=module, outcome=outcome)
    return DeployResult(id=module_id, kind=kind, version=version, outcome=outcome)


def extension_remove(*, module_id: str, by: Any) -> ExtensionModule:
    """Stop serving ``module_id``. ``extension_removing`` goes first: a receiver (a schedule
    that still runs the process) may refuse by raising, and then nothing changes."""
    with transaction.atomic():
        module = (
            ExtensionModule.objects.select_for_update()
            .filter(pk=module_id, status=ExtensionStatus.ACTIVE)
            .first()
        )
        if module is None:
            raise ExtensionNotFound(f"no deployed extension has the id {module_id!r}", id=module_id)
        extension_removing.send(
            sender=ExtensionModule, module_id=module.id, kind=module.kind, by=by
        )
        module.status = ExtensionStatus.REMOVED
        module.save(update_fields=["status", "updated_at"])
    store_forget()
    transaction.on_commit(store_forget)
    return module
