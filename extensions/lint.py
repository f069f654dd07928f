"""An extension's files as one bundle, and the offline checks ``turbobase ext lint`` runs on it.

A bundle is the entry file and the siblings it imports, folded (``extensions.siblings``) and
transpiled to the CommonJS the sandbox loads. The deploy service, the module store's loader and the
CLI all build and load bundles through the functions here, so what a deploy validates is exactly
what a worker later runs.

Pure Python with no Django: the CLI runs these checks on an author's machine with no instance.

The one lint rule a process can trip is the id-literal trap (seed 000, "Deploying a new version"):
the store keys a module on the first ``id: '…'`` literal in its file, so that literal must be the
module's own id. Finding the literal needs no sandbox; knowing the id the module *defines* needs
the module evaluated, which happens in the sandbox's child process, under a CPU cap.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from extensions.idliteral import first_id_literal, id_literal_warning
from extensions.sandbox import LoadedModule, Sandbox, SandboxLimits
from extensions.siblings import siblings_fold
from extensions.transpile import (
    CompileBudget,
    CompileLimitExceeded,
    TranspiledModule,
    import_specifiers,
    transpile,
)

SOURCE_SUFFIXES = (".ts", ".js", ".mts", ".mjs")
# Every file sent, together: an extension is pages, not megabytes. At ~40 us a character this is
# ~16 s of compiling, inside the deploy's compile time limit (transpile.DEFAULT_COMPILE_MS).
MAX_BUNDLE_CHARS = 400_000
MAX_FILES = 200
LINT_LIMITS = SandboxLimits(call_budget_ms=2_000, slice_budget_ms=5_000)


class BundleInvalid(ValueError):
    """The files sent are not an extension (bad path, not text, too large); ``field`` names one."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True)
class Bundle:
    """The entry and its folded siblings: sources as sent, compiled modules, resolved imports."""

    entry: str
    sources: dict[str, str]
    modules: dict[str, TranspiledModule]
    imports: dict[str, dict[str, str]]

    @property
    def sha256(self) -> str:
        return sources_sha256(self.sources)

    def compiled_json(self) -> dict[str, dict[str, Any]]:
        """What the module store keeps per file."""
        return {
            path: {"code": module.code, "map": module.source_map, "imports": self.imports[path]}
            for path, module in self.modules.items()
        }


def sources_sha256(sources: Mapping[str, str]) -> str:
    """One digest over every file's path and text, independent of dict order."""
    canonical = json.dumps(sorted(sources.items()), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _check_files(entry: Any, files: Any) -> tuple[str, dict[str, str]]:
    if not isinstance(files, dict) or not files:
        raise BundleInvalid("files must be an object of {path: source text}", field="files")
    if len(files) > MAX_FILES:
        raise BundleInvalid(f"at most {MAX_FILES} files may be sent", field="files")
    total = 0
    for path, text in files.items():
        where = f"files.{path}"
        if not isinstance(text, str):
            raise BundleInvalid(f"{path}: the file's source must be text", field=where)
        normal = posixpath.normpath(path) if isinstance(path, str) and path else ""
        if normal != path or path.startswith(("/", "../")) or "\\" in path or "\x00" in path:
            raise BundleInvalid(
                f"{path!r} must be a plain relative path inside the project "
                "(no leading /, no ., .. or \\ segments)",
                field=where,
            )
        total += len(text)
    if total > MAX_BUNDLE_CHARS:
        raise CompileLimitExceeded(
            f"the files sent are {total} characters together, over the limit of "
            f"{MAX_BUNDLE_CHARS} characters per deploy",
            file=None,
            limit={"maxChars": MAX_BUNDLE_CHARS},
        )
    if not isinstance(entry, str) or entry not in files:
        raise BundleInvalid(f"entry {entry!r} must name one of the files sent", field="entry")
    if not entry.endswith(SOURCE_SUFFIXES) or entry.endswith(".d.ts"):
        raise BundleInvalid(f"entry {entry!r} must be a .ts or .js file", field="entry")
    return entry, files


def bundle_compile(*, entry: Any, files: Any, budget: CompileBudget | None = None) -> Bundle:
    """Fold ``entry``'s siblings out of ``files`` and transpile each one, all within ``budget``
    (compile time for the whole bundle; a fresh default one when not given).

    Raises ``BundleInvalid``, ``siblings.SiblingImportRefused`` (naming the specifier),
    ``transpile.TranspileError`` (with the author's line and column) or its subclass
    ``transpile.CompileLimitExceeded`` (naming the file and the limit). Runs no author code.
    """
    entry, files = _check_files(entry, files)
    budget = budget or CompileBudget()
    path_of = {text: path for path, text in reversed(files.items())}

    def imports_of(source: str) -> list[str]:
        found = import_specifiers(source, filename=path_of.get(source, entry), budget=budget)
        return [item.specifier for item in found]

    folded = siblings_fold(entry, files, imports_of)
    sources = {path: item["source"] for path, item in sorted(folded.items())}
    modules = {
        path: transpile(source, filename=path, budget=budget) for path, source in sources.items()
    }
    return Bundle(
        entry=entry,
        sources=sources,
        modules=modules,
        imports={path: item["imports"] for path, item in folded.items()},
    )


def bundle_from_stored(*, entry: str, sources: dict[str, str], compiled: dict[str, dict]) -> Bundle:
    """A bundle from the module store's columns, without transpiling again."""
    modules = {
        path: TranspiledModule(filename=path, code=item["code"], source_map=item.get("map") or "{}")
        for path, item in compiled.items()
    }
    return Bundle(
        entry=entry,
        sources=dict(sources),
        modules=modules,
        imports={path: item.get("imports") or {} for path, item in compiled.items()},
    )


def bundle_load(sandbox: Sandbox, bundle: Bundle) -> LoadedModule:
    """Evaluate the bundle in ``sandbox`` as every caller does (deploy, worker, hook, CLI)."""
    siblings = {path: module for path, module in bundle.modules.items() if path != bundle.entry}
    return sandbox.load(bundle.modules[bundle.entry], siblings=siblings, filename=bundle.entry)


def bundle_evaluate(bundle: Bundle, *, limits: SandboxLimits) -> LoadedModule:
    """Load the bundle once in a fresh sandbox child (never in this thread) and describe it."""
    with Sandbox(limits=limits) as sandbox:
        return bundle_load(sandbox, bundle)


@dataclass(frozen=True)
class LintWarning:
    """One finding: the rule, the file it is about, and a sentence."""

    rule: str
    file: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "file": self.file, "message": self.message}


@dataclass(frozen=True)
class LintReport:
    """What lint found: the module's kind and defined id (when evaluated) and the warnings."""

    entry: str
    kind: str | None
    defined_id: str | None
    literal: str | None
    warnings: list[LintWarning] = field(default_factory=list)


def lint_bundle(bundle: Bundle, *, loaded: LoadedModule | None) -> LintReport:
    """The offline checks on a compiled bundle; ``loaded`` is its evaluation, when there is one."""
    source = bundle.sources[bundle.entry]
    definition = loaded.definition if loaded is not None else None
    defined = definition.get("id") if isinstance(definition, dict) else None
    defined_id = defined if isinstance(defined, str) else None
    warnings: list[LintWarning] = []
    # An evaluated file with no define*() default export is a sibling module, not an extension:
    # the store never keys it, so the trap does not apply.
    is_extension = loaded is None or loaded.kind is not None
    sentence = id_literal_warning(source, defined_id) if is_extension else None
    if sentence is not None:
        warnings.append(LintWarning(rule="id-literal", file=bundle.entry, message=sentence))
    return LintReport(
        entry=bundle.entry,
        kind=loaded.kind if loaded is not None else None,
        defined_id=defined_id,
        literal=first_id_literal(source),
        warnings=warnings,
    )


def lint_check(*, entry: Any, files: Any, limits: SandboxLimits | None = LINT_LIMITS) -> LintReport:
    """Fold, transpile, evaluate (unless ``limits`` is None) and check the id-literal trap.

    Refusals raise exactly as ``bundle_compile`` and the sandbox do; warnings are returned.
    """
    bundle = bundle_compile(entry=entry, files=files)
    loaded = bundle_evaluate(bundle, limits=limits) if limits is not None else None
    return lint_bundle(bundle, loaded=loaded)
