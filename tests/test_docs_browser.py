"""The built site in a real browser: headless Chromium opens the gallery and every env page.

Each page must load every image (``naturalWidth > 0``: the GIFs exist and decode) and log no
console error. Screenshots go to a temporary folder, printed at the start (``pytest -s``).

Needs Debian's ``chromium`` and ``chromium-driver``; as root the set-up installs them with
apt-get when they are missing, otherwise the test is skipped with the command to run.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

import gpu_zoo
from tests.helpers import reference
from tests.test_docs import built_site

selenium = reference("selenium", reason="the docs extra is not installed: pip install -e '.[docs]'")
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
PACKAGES = ("chromium", "chromium-driver")
LOAD_GUARD_S = 60  # a hang guard for one page, not a speed requirement


def ensure_chromium():
    """Installs Chromium and its driver when missing and allowed; skips the test otherwise."""
    if os.path.exists(CHROMIUM) and os.path.exists(DRIVER):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip(f"needs {CHROMIUM} and {DRIVER}: run `apt-get install -y {' '.join(PACKAGES)}` as root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]
    result = subprocess.run(install, env=env, capture_output=True, text=True)
    if result.returncode != 0:  # a fresh machine has no package lists yet
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, text=True)
        result = subprocess.run(install, env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"installing {PACKAGES} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="module")
def site_url():
    site, code, output = built_site()
    assert code == 0, f"mkdocs build --strict failed:\n{output}"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=site))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    ensure_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


IMAGES_JS = "return Array.from(document.images).map(i => [i.currentSrc || i.src, i.complete, i.naturalWidth]);"


def open_page(driver, url: str) -> list[list]:
    """Loads ``url``, waits until every image has finished loading, returns [src, complete, width] per image."""
    driver.get(url)
    wait = WebDriverWait(driver, LOAD_GUARD_S)
    wait.until(lambda d: d.execute_script("return document.readyState") == "complete")
    wait.until(lambda d: all(done for _, done, _ in d.execute_script(IMAGES_JS)))
    return driver.execute_script(IMAGES_JS)


def test_gallery_pages_show_their_images_without_console_errors(browser, site_url, tmp_path_factory):
    shots = tmp_path_factory.mktemp("screenshots")
    print(f"screenshots in {shots}")
    pages = {"gallery": "gallery/", **{env_id: f"gallery/{env_id}/" for env_id in gpu_zoo.registered_envs()},
             "home": "", "new_env_guide": "guides/new_env/"}
    browser.get_log("browser")  # start from an empty console
    for name, path in pages.items():
        images = open_page(browser, site_url + path)
        broken = [src for src, _, width in images if width == 0]
        assert not broken, f"{path}: images that did not load: {broken}"
        if name in gpu_zoo.registered_envs():
            assert any(src.endswith(f"/gallery/{name}.gif") for src, _, _ in images), f"{path}: no animation shown"
        errors = [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
        assert not errors, f"{path}: console errors: {errors}"
        browser.save_screenshot(str(shots / f"{name}.png"))
        assert Path(shots / f"{name}.png").stat().st_size > 0
    gallery_images = open_page(browser, site_url + "gallery/")
    assert len(gallery_images) >= len(gpu_zoo.registered_envs()), "the gallery index lacks thumbnails"
