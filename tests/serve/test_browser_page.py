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


READ_ALONG = "Hello there, this is the longest line. It is spoken in several chunks!"
# Each span that turns "now" (highlighted), by its place among the words, as it happens.
WATCH_HIGHLIGHTS = """
window.lit = [];
const box = document.getElementById('words');
new MutationObserver((changes) => {
  for (const c of changes) {
    if (c.target.classList.contains('now')) window.lit.push([...box.children].indexOf(c.target));
  }
}).observe(box, {attributes: true, subtree: true, attributeFilter: ['class']});
// A seed for the page's request (the page has no field for it): the same words each run.
const fetched = window.fetch;
window.fetch = (url, options) => {
  if (url === 'tts') options.body.append('seed', '3');
  return fetched(url, options);
};
"""


@pytest.fixture(scope="module")
def words_pack(tmp_path_factory):
    from tests.support.wordspack import build_words_pack

    return build_words_pack(tmp_path_factory.mktemp("page_words_pack"))


def test_the_page_highlights_each_word_as_it_plays(browser, words_pack) -> None:
    """Read-along: the page asks for words, shows them as spans and highlights the one
    being heard; the highlights go through the words in order while the audio plays.
    With POCKETTTS_SCREENSHOT=PATH it also pauses mid-way and saves the page there
    (README's docs/read-along.png)."""
    import os

    from selenium.webdriver.common.by import By

    from tests.support.servehelp import tiny_loader

    with serving(tiny_loader(words_pack)) as (url, records):
        browser.set_window_size(760, 760)
        browser.get(url + "/")
        _wait(browser, "return document.getElementById('voice').options[0].text.includes('(')")
        text = browser.find_element(By.ID, "text")
        text.clear()
        text.send_keys(READ_ALONG)
        browser.execute_script(WATCH_HIGHLIGHTS)
        browser.find_element(By.ID, "speak").click()
        _wait(browser, "return document.querySelectorAll('#words span').length > 0")
        shot = os.environ.get("POCKETTTS_SCREENSHOT")
        if shot:
            _wait(browser, "return window.lit.length >= 5")
            browser.execute_script("document.getElementById('audio').pause()")
            browser.execute_async_script(  # the controls drawn at the paused time
                "const done = arguments[0];"
                "requestAnimationFrame(() => requestAnimationFrame(() => done()));"
            )
            browser.save_screenshot(shot)
            browser.execute_script("document.getElementById('audio').play()")
        _wait(browser, "return document.getElementById('audio').ended")
        words = browser.execute_script(
            "return [...document.querySelectorAll('#words span')].map((s) => s.textContent)"
        )
        lit = browser.execute_script("return window.lit")
        now = browser.execute_script("return document.querySelectorAll('#words .now').length")
    spoken = [r for r in records.records if r["event"] == "speech"]
    assert spoken[-1]["outcome"] == "done" and spoken[-1]["endpoint"] == "tts"
    # The spans are the text's own words (a word passed over is left out), in order.
    given = [w.strip(",.!") for w in READ_ALONG.split()]
    assert len(words) >= 6 and all(w in given for w in words)
    assert [given.index(w) for w in words] == sorted(given.index(w) for w in words)
    # Highlighted one after another, forward only, most of them seen (a word is 80 ms
    # or more; a busy machine may skip a frame or two), none left lit at the end.
    assert lit == sorted(set(lit)), lit
    assert lit[0] <= 1 and lit[-1] >= len(words) - 2 and len(lit) >= len(words) * 0.6, lit
    assert now == 0
