"""The page at / in a real headless Chromium (Debian's chromium and chromium-driver,
installed by .ci/run): type, pick a voice, press Speak, and the <audio> element plays."""

from __future__ import annotations

import shutil
import time

import pytest

from tests.support.servehelp import serving

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None or DRIVER is None,
        reason="needs Debian's chromium and chromium-driver (apt-get install, as .ci/run does)",
    ),
]


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--autoplay-policy=no-user-gesture-required",
        "--mute-audio",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(driver, script: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.1)
    status = driver.execute_script("return document.getElementById('status').textContent")
    raise AssertionError(f"timed out waiting for: {script} (status: {status!r})")


def test_page_speaks_and_the_audio_plays(browser) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    with serving() as (url, records):
        browser.get(url + "/")
        # The voice list comes from /v1/voices: the default voice is its first entry.
        _wait(browser, "return document.getElementById('voice').options[0].text.includes('(')")
        Select(browser.find_element(By.ID, "voice")).select_by_index(0)
        text = browser.find_element(By.ID, "text")
        text.clear()
        text.send_keys("Hello from a real browser.")
        browser.find_element(By.ID, "speak").click()
        duration = _wait(
            browser,
            "const a = document.getElementById('audio');"
            "return a.readyState >= 1 && a.duration > 0 && isFinite(a.duration) && a.duration;",
        )
        played = _wait(browser, "return document.getElementById('audio').currentTime > 0;")
        assert played
        spoken = [r for r in records.records if r["event"] == "speech"]
        assert spoken and spoken[-1]["outcome"] == "done" and spoken[-1]["endpoint"] == "tts"
        # The element holds the whole utterance the server made.
        assert abs(duration - spoken[-1]["audio_s"]) < 0.05
