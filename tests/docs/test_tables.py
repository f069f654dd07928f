"""The generated tables in README and docs/ are what ``python -m tests.docs.tables`` writes now."""

from __future__ import annotations

import re

import pytest

from tests.docs.tables import ROOT, page_generated, pages, settings_table, table_for

pytestmark = pytest.mark.django_db  # the tables read Django's registry and URL configuration


def test_every_generated_table_is_current():
    stale = [
        str(page.relative_to(ROOT))
        for page in pages()
        if page_generated(page.read_text()) != page.read_text()
    ]
    assert not stale, f"regenerate with: python -m tests.docs.tables  (stale: {', '.join(stale)})"


def test_the_tables_are_there():
    text = {page.name: page.read_text() for page in pages()}
    assert "<!-- generated: settings -->" in text["operations.md"]
    assert "<!-- generated: settings groups=" in text["processes.md"]
    assert "<!-- generated: codes -->" in text["api.md"]
    assert "<!-- generated: routes -->" in text["api.md"]


def test_a_setting_changed_in_the_registry_makes_the_page_stale(monkeypatch):
    from guardrails import registry

    page = "<!-- generated: settings groups=slices -->\n<!-- end generated -->\n"
    current = page_generated(page)
    spec = registry.REGISTRY["processes.slice_cap"]
    monkeypatch.setitem(
        registry.REGISTRY, spec.key, registry.SettingSpec(**{**spec.__dict__, "default": 7})
    )
    assert page_generated(current) != current
    assert "| `processes.slice_cap` | integer | 7 |" in settings_table(["slices"])


def test_the_settings_table_has_every_registry_key_once():
    from guardrails.registry import REGISTRY

    table = table_for("settings", "")
    assert [line.split("`")[1] for line in table.splitlines()[2:]] == list(REGISTRY)


def test_an_unknown_table_kind_is_refused():
    with pytest.raises(ValueError, match="unknown generated table 'nonsense'"):
        page_generated("<!-- generated: nonsense -->\n<!-- end generated -->")


def test_defaults_quoted_in_prose_are_the_registry_s():
    """Prose that quotes a setting's default as a bare number — "`processes.slice_cap` (1000)" —
    quotes the registry's (a unit after the number, "(30 s)", is prose's own and not checked)."""
    from guardrails.registry import REGISTRY

    wrong = []
    for page in pages():
        text = page.read_text()
        for key, spec in REGISTRY.items():
            for quoted in re.findall(
                rf"`{re.escape(key)}` \((\d[\d,]*)(?=[,):;]| [^a-zA-Z])", text
            ):
                if int(quoted.replace(",", "")) != spec.default:
                    wrong.append(
                        f"{page.relative_to(ROOT)}: {key} ({quoted}), registry {spec.default}"
                    )
    assert not wrong, "\n".join(wrong)
