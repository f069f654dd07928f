"""The operator journeys in a real browser: Playwright for Python driving Debian's chromium.

Nothing downloads a browser: Playwright is pointed at ``/usr/bin/chromium`` (``.ci/run`` installs
it with apt when missing). Every page a journey opens is watched: a console error, an uncaught
page error or a 5xx response fails the journey. Screenshots go to ``var/screenshots/``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes.conftest import _forget_store, deploy, two_notes  # noqa: F401  (fixtures)

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WIDTH, HEIGHT = 1280, 900


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if CHROMIUM.exists():
        return
    skip = pytest.mark.skip(
        reason=f"{CHROMIUM} is absent: install Debian's chromium (apt-get install chromium)"
    )
    for item in items:
        if item.get_closest_marker("browser") is not None:
            item.add_marker(skip)


class Watched:
    """A page and what went wrong on it: console errors, page errors, 5xx responses."""

    def __init__(self, page, live_url: str) -> None:
        self.page = page
        self.url = live_url
        self.problems: list[str] = []
        page.on(
            "console",
            lambda message: (
                message.type == "error"
                and self.problems.append(f"console error: {message.text} ({message.location})")
            ),
        )
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on(
            "response",
            lambda response: (
                response.status >= 500
                and self.problems.append(
                    f"{response.status} from {response.request.method} {response.url}"
                )
            ),
        )

    def goto(self, path: str):
        return self.page.goto(self.url + path)

    def shot(self, name: str, *, full_page: bool = False) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        target = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(target), full_page=full_page)
        return target

    def assert_clean(self) -> None:
        assert self.problems == [], self.problems

    def sign_in(self, username: str, password: str) -> None:
        """Through the admin's own sign-in form, as an operator does."""
        self.goto("/admin/login/?next=/admin/")
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", password)
        self.page.click("input[type=submit]")
        self.page.wait_for_url(self.url + "/admin/")


@pytest.fixture(scope="session")
def chromium() -> Iterator:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls (fixtures,
    # assertions on the database) are synchronous and never overlap a browser call.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def browser_page(chromium, live_server) -> Iterator[Watched]:
    context = chromium.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    watched = Watched(context.new_page(), live_server.url)
    yield watched
    context.close()
    watched.assert_clean()
