"""What several test files share: one torch thread per process, and a real browser (Debian's headless Chromium through
Selenium)."""

import os
import shutil

import pytest

# The suite runs on two workers, a core each (pyproject.toml): one torch thread per process, here and in the commands
# the tests start, as threads that wait on each other across busy cores cost these small networks more than they bring.
os.environ.setdefault("OMP_NUM_THREADS", "1")

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
# CI installs the browser and sets this, so that a missing browser fails there instead of skipping.
BROWSER_REQUIRED = os.environ.get("PONGRL_REQUIRE_BROWSER") == "1"


@pytest.fixture
def browser(tmp_path):
    if not (CHROMIUM and CHROMEDRIVER):
        if BROWSER_REQUIRED:
            pytest.fail("chromium and chromedriver are required here (apt-get install chromium chromium-driver)")
        pytest.skip("no chromium/chromedriver on this machine (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        f"--user-data-dir={tmp_path / 'chromium'}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()
