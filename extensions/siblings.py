"""Sibling-import folding: an extension may import relative files inside its own directory.

Every other specifier — an npm package, a Node builtin, a path escaping the directory — is
refused by name. The SDK specifiers are provided by the sandbox itself. The extension's
directory is the entry file's directory: a sibling may live below it, never beside or above it.

Pure Python with no Django, so the offline ``turbobase ext lint`` / ``ext test`` can fold too;
the deploy service turns ``SiblingImportRefused`` into ``extensions.errors.ExtensionImportRefused``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable

SDK_SPECIFIERS = frozenset({"@turbobase/extensions", "@turbobase/extensions/process"})
_EXTENSIONS = (".ts", ".js", ".mts", ".mjs")


class SiblingImportRefused(ValueError):
    """An import the sandbox will not load; ``field`` names the specifier (or ``entry``)."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def _is_inside(path: str, directory: str) -> bool:
    return directory == "" or path.startswith(directory + "/")


def _resolve(importer: str, specifier: str, files: dict[str, str], root: str) -> str:
    if not specifier.startswith(("./", "../")):
        builtin = specifier.startswith("node:") or specifier.split("/")[0] in _NODE_BUILTINS
        kind = "a Node builtin" if builtin else "an npm package"
        raise SiblingImportRefused(
            f"import {specifier!r} in {importer} is refused: {kind} cannot be loaded in the sandbox; "
            "only @turbobase/extensions and relative siblings inside the extension's directory import",
            field=specifier,
        )
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(importer), specifier))
    if (
        joined.startswith("../")
        or joined == ".."
        or joined.startswith("/")
        or not _is_inside(joined, root)
    ):
        raise SiblingImportRefused(
            f"import {specifier!r} in {importer} escapes the extension's directory", field=specifier
        )
    stem, ext = posixpath.splitext(joined)
    candidates = [joined] if ext in _EXTENSIONS else []
    # './rule.js' names the compiled file; its source may be './rule.ts' (TypeScript's convention).
    base = stem if ext in _EXTENSIONS else joined
    candidates += [base + e for e in _EXTENSIONS] + [
        posixpath.join(joined, "index" + e) for e in _EXTENSIONS
    ]
    for candidate in candidates:
        if candidate in files:
            return candidate
    raise SiblingImportRefused(
        f"import {specifier!r} in {importer}: no such file beside it ({joined})", field=specifier
    )


_NODE_BUILTINS = frozenset(
    [
        "assert",
        "buffer",
        "child_process",
        "cluster",
        "crypto",
        "dgram",
        "dns",
        "events",
        "fs",
        "http",
        "http2",
        "https",
        "module",
        "net",
        "os",
        "path",
        "perf_hooks",
        "process",
        "querystring",
        "readline",
        "stream",
        "string_decoder",
        "timers",
        "tls",
        "tty",
        "url",
        "util",
        "v8",
        "vm",
        "worker_threads",
        "zlib",
    ]
)


def siblings_fold(
    entry: str, files: dict[str, str], imports_of: Callable[[str], Iterable[str]]
) -> dict[str, dict]:
    """Resolve ``entry``'s relative imports transitively.

    ``imports_of(source) -> list[str]`` lists a file's import specifiers. Returns
    ``{path: {"source": …, "imports": {specifier: resolved path or SDK name}}}`` for every file
    the entry needs, entry included. Raises ``SiblingImportRefused`` naming the specifier.
    """
    entry = posixpath.normpath(entry)
    if entry not in files:
        raise SiblingImportRefused(
            f"entry file {entry!r} is not among the files sent", field="entry"
        )
    root = posixpath.dirname(entry)
    folded: dict[str, dict] = {}
    pending = [entry]
    while pending:
        path = pending.pop()
        if path in folded:
            continue
        source = files[path]
        resolved: dict[str, str] = {}
        for specifier in imports_of(source):
            if specifier in SDK_SPECIFIERS:
                resolved[specifier] = specifier
                continue
            target = _resolve(path, specifier, files, root)
            resolved[specifier] = target
            pending.append(target)
        folded[path] = {"source": source, "imports": resolved}
    return folded
