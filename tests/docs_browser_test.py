"""The built documentation site in a real headless browser (Debian's
Chromium through Selenium; `.ci/run` installs it): the home page, a model
card and the API reference render, with their titles and no image that
fails to load (the gallery has them all)."""

import functools
import http.server
import os
import pathlib
import shutil
import subprocess
import sys
import threading

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from attention_zoo_apps.figures.flags import FIGURES

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
PAGES = {
    "": "attention-zoo",
    "getting-started/": "Getting started",
    "gallery/": "The gallery",
    "zoo/translation-spa-eng/": "translation-spa-eng",
    "api/layers/": "Layers",
}
# `document.images` that did not load.
BROKEN_IMAGES = (
    "return Array.from(document.images)"
    ".filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)"
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None or CHROMEDRIVER is None,
        reason="needs Debian's chromium and chromium-driver (.ci/run "
        "installs them)",
    ),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built into a temporary folder, served over HTTP."""
    folder = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"]
        + ["--site-dir", str(folder)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu"):
        options.add_argument(argument)
    options.add_argument("--disable-dev-shm-usage")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


@pytest.mark.parametrize("page, title", sorted(PAGES.items()))
def test_a_page_renders_with_every_image(site, browser, page, title):
    browser.get(site + page)
    assert title in browser.title
    assert browser.find_elements("css selector", "article h1")
    assert browser.execute_script(BROKEN_IMAGES) == []
    if page == "gallery/":  # a picture (or two) per figure, all loaded
        images = browser.find_elements("css selector", "article img")
        assert len(images) >= len(FIGURES)
