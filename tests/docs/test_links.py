"""Every relative link in README and docs/ resolves: the file exists, and a ``#anchor`` names a
heading of that page (GitHub's way of making an anchor from a heading).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.tables import ROOT, pages

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```$", re.MULTILINE | re.DOTALL)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {anchor(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def links(page: Path) -> list[str]:
    return [target for target in LINK.findall(FENCE.sub("", page.read_text()))]


def broken() -> list[str]:
    found = []
    for page in pages():
        for target in links(page):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto: — not ours to check
                continue
            path, _, fragment = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                found.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
                continue
            if fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
                found.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    return found


def test_every_relative_link_resolves():
    assert not broken(), "\n".join(broken())


def test_the_readme_links_every_page_in_docs():
    readme = (ROOT / "README.md").read_text()
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{page.name})" in readme, f"README does not link docs/{page.name}"


def test_anchors_are_made_as_github_makes_them():
    assert anchor("Sleeping (`sleep`)") == "sleeping-sleep"
    assert anchor("Workers, lanes and the engine") == "workers-lanes-and-the-engine"
    assert anchor("Metrics, logs, traces, health: the reference") == (
        "metrics-logs-traces-health-the-reference"
    )
