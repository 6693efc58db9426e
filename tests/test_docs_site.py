"""The documentation site, built as ``make docs`` builds it and read in a real browser.

Headless Chromium (Debian's ``chromium`` and ``chromium-driver``, driven by selenium)
opens the home page, the spec-language page and an item's page from the built site,
served on 127.0.0.1: no console error on any, the item's state diagram drawn by mermaid
(served from the site, never a CDN), and the search finding the pages that speak of
``previous_response_id``. A screenshot of each page is kept in ``build/docs-screenshots``.
Without Chromium the test is skipped, saying why; ``.ci/run`` installs it and sets
``RESPONSES_STREAM_REQUIRE_BROWSER=1``, which turns that skip into a failure.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docsite import SiteError, build

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "build" / "docs-screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
REQUIRED = os.environ.get("RESPONSES_STREAM_REQUIRE_BROWSER") == "1"
PAGES = {
    "home": "index.html",
    "spec-language": "spec-language.html",
    "item": "catalogue/items/function_call.html",
}


def unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason} (RESPONSES_STREAM_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site built strictly into a temporary folder, served on 127.0.0.1."""
    try:
        folder = build(tmp_path_factory.mktemp("site"))
    except SiteError as exc:
        if "cannot fetch mermaid" in str(exc):
            unavailable(str(exc))
        raise
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if CHROMIUM is None or DRIVER is None:
        unavailable("no chromium and chromedriver here (Debian: chromium, chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,1000",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(DRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def visit(browser: Any, url: str, name: str) -> list[str]:
    """Open a page, wait for it to settle, keep its screenshot; its console errors."""
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get_log("browser")  # what earlier pages logged
    browser.get(url)
    WebDriverWait(browser, 30).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def shoot(browser: Any, name: str) -> None:
    browser.save_screenshot(str(SHOTS / f"{name}.png"))


@pytest.mark.parametrize("name", sorted(PAGES))
def test_each_page_loads_without_a_console_error(site: str, browser: Any, name: str) -> None:
    errors = visit(browser, f"{site}/{PAGES[name]}", name)
    title = browser.title
    shoot(browser, name)
    assert errors == [], errors
    assert "responses-stream" in title
    assert (SHOTS / f"{name}.png").stat().st_size > 10_000


def test_the_state_diagram_is_drawn(site: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    errors = visit(browser, f"{site}/{PAGES['item']}", "item")
    source = "stateDiagram-v2"

    def drawn(driver: Any) -> bool:
        # mermaid replaces the block's source with the drawing (in a closed shadow root,
        # so the test sees the drawing's size, and the screenshot, not its svg)
        blocks = driver.find_elements(By.CSS_SELECTOR, ".mermaid")
        return bool(blocks) and all(
            source not in b.text and b.size["height"] > 150 and b.size["width"] > 100
            for b in blocks
        )

    WebDriverWait(browser, 30).until(drawn)
    diagram = browser.find_elements(By.CSS_SELECTOR, ".mermaid")[0]
    browser.execute_script("arguments[0].scrollIntoView()", diagram)
    shoot(browser, "item-diagram")
    assert errors == [], errors
    assert source not in browser.find_element(By.TAG_NAME, "body").text


def test_the_search_finds_previous_response_id(site: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    visit(browser, f"{site}/index.html", "search")
    box = browser.find_element(By.CSS_SELECTOR, "input.md-search__input")  # in the header
    box.click()
    box.send_keys("previous_response_id")

    def pages(driver: Any) -> set[str]:
        # read in one script: the list is drawn again as the search narrows
        found = driver.execute_script(
            "return [...document.querySelectorAll('.md-search-result__item a')].map(a => a.href)"
        )
        return {str(h).split("#")[0].split("?")[0].rsplit("/", 1)[-1] for h in found}

    try:
        WebDriverWait(browser, 30).until(lambda d: "gateway-requests.html" in pages(d))
    finally:
        shoot(browser, "search")
    assert {"gateway-requests.html", "gateway-clients.html"} <= pages(browser)
