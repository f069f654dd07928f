"""The ``local`` provider: a deterministic answer made here, for tests, demos and air-gapped use.

Without a schema it answers ``"local answer <8 hex>"``, the hex a hash of the prompt; with one it
builds the smallest value that fits (every ``required`` property, the first ``enum`` value chosen
by the hash, strings and numbers derived from the prompt). The same prompt always gets the same
answer, so a test can say what a run must have written.
"""

from __future__ import annotations

import hashlib
from typing import Any


def _digest(prompt: str, where: str) -> str:
    return hashlib.sha256(f"{where}\n{prompt}".encode()).hexdigest()


def _instance(schema: Any, prompt: str, where: str) -> Any:
    if not isinstance(schema, dict):
        return f"local answer {_digest(prompt, where)[:8]}"
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][int(_digest(prompt, where), 16) % len(schema["enum"])]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        wanted = schema.get("required") or list(properties)
        return {
            name: _instance(properties.get(name, {}), prompt, f"{where}.{name}") for name in wanted
        }
    if kind == "array":
        return [_instance(schema.get("items", {}), prompt, f"{where}[0]")] * max(
            1, schema.get("minItems", 1)
        )
    if kind == "integer":
        return max(schema.get("minimum", 0), len(prompt) % 100)
    if kind == "number":
        return float(max(schema.get("minimum", 0), len(prompt) % 100))
    if kind == "boolean":
        return int(_digest(prompt, where), 16) % 2 == 0
    if kind == "null":
        return None
    return f"local answer {_digest(prompt, where)[:8]}"


class LocalProvider:
    name = "local"

    def answer(self, *, prompt: str, schema: dict[str, Any] | None) -> Any:
        return _instance(schema, prompt, "answer")
