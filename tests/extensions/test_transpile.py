"""TypeScript and ES-module JavaScript to the CommonJS the sandbox loads."""

from __future__ import annotations

import time

import pytest

from extensions import transpile as transpile_module
from extensions.transpile import (
    CompileBudget,
    CompileLimitExceeded,
    Diagnostic,
    ImportSpecifier,
    TranspileError,
    compiles_in_flight,
    import_specifiers,
    transpile,
    typescript_version,
)

TYPED = """import { defineProcess } from '@turbobase/extensions';

interface Input { vendorId: string; amount: number }
type Payload = { parent: Record<string, unknown> };

export default defineProcess({
  id: 'acme:typed',
  steps: [
    {
      id: 'po',
      recordType: 'purchaseOrder',
      build: async (ctx: { input: Input }): Promise<Payload> => {
        const amount = ctx.input.amount satisfies number;
        return { parent: { entity_id: ctx.input.vendorId, amount } };
      },
    },
  ],
});
"""


def test_the_bundled_compiler_is_typescript_5_7() -> None:
    assert typescript_version().startswith("5.7.")


def test_types_are_removed_and_imports_become_require() -> None:
    module = transpile(TYPED, filename="typed.ts")

    assert module.filename == "typed.ts"
    assert 'require("@turbobase/extensions")' in module.code
    assert "exports.default" in module.code
    assert "interface" not in module.code and ": Input" not in module.code
    assert "async (ctx) =>" in module.code  # ES2022 target: async/await kept native
    assert "sourceMappingURL" not in module.code


def test_modern_javascript_transpiles_too() -> None:
    module = transpile(
        "import { defineHook } from '@turbobase/extensions';\n"
        "export default defineHook({ id: 'h', run: (ctx) => ctx?.a ?? 1 });\n",
        filename="hook.js",
    )
    assert "ctx?.a ?? 1" in module.code
    assert 'require("@turbobase/extensions")' in module.code


def test_syntax_errors_name_line_and_column() -> None:
    with pytest.raises(TranspileError) as raised:
        transpile("const a = 1;\nconst b = (;\nlet c: = 3;\n", filename="broken.ts")

    assert raised.value.code == "extension_syntax_error"
    assert raised.value.diagnostics == [
        Diagnostic(
            file="broken.ts", line=2, column=12, message="Expression expected.", ts_code=1109
        ),
        Diagnostic(file="broken.ts", line=3, column=8, message="Type expected.", ts_code=1110),
    ]
    assert str(raised.value).startswith("broken.ts:2:12: Expression expected.")


def test_type_syntax_in_a_javascript_file_is_refused() -> None:
    with pytest.raises(TranspileError, match=r"bad\.js:1:10: Type annotations"):
        transpile("const a: number = 1;\n", filename="bad.js")


def test_an_oversized_file_is_refused_without_parsing() -> None:
    with pytest.raises(CompileLimitExceeded) as raised:
        transpile("//" + "x" * 100_000, filename="huge.ts")

    assert (
        str(raised.value)
        == "huge.ts is 100002 characters, over the limit of 100000 characters per file"
    )
    assert (raised.value.field, raised.value.limit) == ("files.huge.ts", {"maxChars": 100_000})
    assert raised.value.code == "EXTENSION_TOO_LARGE"
    assert compiles_in_flight() == 0  # refused before any compiler saw it


def test_a_compile_past_its_budget_is_stopped_and_the_next_one_works() -> None:
    source = "".join(f"export const v{i}: number = {i};\n" for i in range(2_000))
    with pytest.raises(CompileLimitExceeded) as raised:
        transpile(source, filename="slow.ts", budget=CompileBudget(1))

    assert raised.value.field == "files.slow.ts"
    assert raised.value.limit == {"compileMs": 1}
    assert transpile("export const a = 1;\n", filename="after.ts").code.endswith("a = 1;\n")


def test_nesting_that_overflows_the_parser_is_a_transpile_error() -> None:
    with pytest.raises(TranspileError, match="could not process this file"):
        transpile("const a = " + "[" * 40_000 + "]" * 40_000 + ";\n", filename="deep.ts")
    assert transpile("export const a = 1;\n", filename="after.ts").code.endswith("a = 1;\n")


def test_the_source_map_leads_back_to_the_authors_line() -> None:
    module = transpile(TYPED, filename="typed.ts")
    generated = module.code.splitlines()
    line = next(i for i, text in enumerate(generated, 1) if "entity_id" in text)
    column = generated[line - 1].index("return") + 1

    assert module.original_position(line, column) == (14, 9)
    assert module.original_position(1, 1) is None  # the emitted "use strict" has no origin
    assert module.original_position(10_000, 1) is None


def test_import_specifiers_lists_every_kind_of_import() -> None:
    source = (
        "import a from './a.js';\n"
        "import type { T } from './types';\n"
        "export * from 'lodash';\n"
        "const fs = require('fs');\n"
        "const lazy = () => import('../up.js');\n"
    )

    assert import_specifiers(source) == [
        ImportSpecifier("./a.js", 1, 15),
        ImportSpecifier("./types", 2, 24),
        ImportSpecifier("lodash", 3, 15),
        ImportSpecifier("fs", 4, 20),
        ImportSpecifier("../up.js", 5, 27),
    ]


def test_import_specifiers_of_a_file_without_imports() -> None:
    assert import_specifiers("export const x = 1;\n") == []


def test_an_idle_compiler_child_is_ended_and_a_new_one_serves_the_next_compile(monkeypatch):
    monkeypatch.setattr(transpile_module, "COMPILER_IDLE_S", 0.2)
    transpile("export const a = 1;\n", filename="a.ts")
    children = [child for _, child in transpile_module._idle]
    assert children

    waited_until = time.monotonic() + 60  # a bound for a hung reaper, not a speed assertion
    while any(c.process.poll() is None for c in children) and time.monotonic() < waited_until:
        time.sleep(0.05)

    assert all(c.process.poll() is not None for c in children)
    assert transpile_module._idle == [] or all(c not in children for _, c in transpile_module._idle)
    assert transpile("export const b = 2;\n", filename="b.ts").code.endswith("b = 2;\n")
