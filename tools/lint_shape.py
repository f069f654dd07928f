"""The code's shape, checked by ``make lint``: in the rooms (tests and migrations aside)

- no import cycle between modules (module-level imports; those under ``if TYPE_CHECKING:`` and
  those inside functions are left out, since neither runs when the module is imported);
- no module over ``MAX_MODULE_LINES`` lines;
- no function or method over ``MAX_FUNCTION_LINES`` lines (from its ``def`` to its last line).

Usage: ``python tools/lint_shape.py [ROOT]`` (ROOT: the repository, by default this file's). Prints
``path:line: what is over`` for each violation and exits 1 if there is one; 0 otherwise.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOMS = ("kernel", "extensions", "guardrails", "records", "sources", "processes", "turbobase")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
SKIPPED_DIRS = {"migrations", "tests", "__pycache__"}

# Violations allowed to stand (none today), each (path, kind, name) as the report prints them;
# an entry whose violation is gone is reported as stale.
ALLOWED: set[tuple[str, str, str]] = set()


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    kind: str  # module, function, cycle
    name: str  # the function's qualified name; empty for a module or a cycle
    message: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.path, self.kind, self.name)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def room_files(root: Path) -> Iterator[Path]:
    for room in ROOMS:
        for path in sorted((root / room).rglob("*.py")):
            if not SKIPPED_DIRS.intersection(path.relative_to(root).parts):
                yield path


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def size_violations(rel: str, source: str, tree: ast.Module) -> Iterator[Violation]:
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES:
        message = f"module has {lines} lines (limit {MAX_MODULE_LINES})"
        yield Violation(rel, MAX_MODULE_LINES + 1, "module", "", message)
    for name, node in _functions(tree, ""):
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        if length > MAX_FUNCTION_LINES:
            message = f"function {name} has {length} lines (limit {MAX_FUNCTION_LINES})"
            yield Violation(rel, node.lineno, "function", name, message)


def _functions(
    node: ast.AST, prefix: str
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            yield f"{prefix}{child.name}", child
            yield from _functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, f"{prefix}{child.name}.")
        else:
            yield from _functions(child, prefix)


def module_imports(tree: ast.Module, name: str, is_package: bool) -> Iterator[tuple[str, int]]:
    """The modules ``name`` imports when it is imported, with the line of each import."""
    for node in _top_level(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, *([base] if base else [])])
            yield base, node.lineno
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements run on import: into if/try/with blocks, not into functions or classes' methods,
    and not into ``if TYPE_CHECKING:``."""
    for node in body:
        if isinstance(node, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(node.test):
                yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _top_level(block)
            for handler in node.handlers:
                yield from _top_level(handler.body)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from _top_level(node.body)
        else:
            yield node


def cycle_violations(root: Path, trees: dict[str, tuple[Path, ast.Module]]) -> Iterator[Violation]:
    edges: dict[str, dict[str, int]] = {name: {} for name in trees}
    for name, (path, tree) in trees.items():
        for imported, line in module_imports(tree, name, path.name == "__init__.py"):
            target = _resolve(imported, trees)
            if target is not None and target != name:
                edges[name].setdefault(target, line)
    for component in _components(edges):
        members = set(component)
        for name in sorted(component):
            rel = trees[name][0].relative_to(root).as_posix()
            for target, line in sorted(edges[name].items()):
                if target in members:
                    cycle = " <-> ".join(sorted(component))
                    message = f"import cycle: {name} imports {target} (cycle: {cycle})"
                    yield Violation(rel, line, "cycle", "", message)


def _resolve(imported: str, trees: dict[str, tuple[Path, ast.Module]]) -> str | None:
    while imported and imported not in trees:
        imported = imported.rpartition(".")[0]
    return imported or None


def _components(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def violations(root: Path) -> list[Violation]:
    trees: dict[str, tuple[Path, ast.Module]] = {}
    found: list[Violation] = []
    for path in room_files(root):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path))
        trees[module_name(root, path)] = (path, tree)
        found += size_violations(path.relative_to(root).as_posix(), source, tree)
    found += cycle_violations(root, trees)
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    found = violations(root)
    failing = [v for v in found if v.key not in ALLOWED]
    for violation in failing:
        print(violation)
    if root.resolve() == Path(__file__).resolve().parents[1]:
        for stale in sorted(ALLOWED - {v.key for v in found}):
            print(f"note: ALLOWED entry {stale} no longer violates; remove it")
    if failing:
        print(f"lint_shape: {len(failing)} violation(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
