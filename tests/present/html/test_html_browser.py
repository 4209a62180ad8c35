"""The HTML report in a real browser: headless Chromium opens it from file://, sorts and filters the index,
follows a finding to its source line and back, and runs nothing the traced script's names or source hold.

Needs Chromium and chromedriver (Debian: `apt-get install chromium chromium-driver`, which `make setup` does
as root) and Selenium (the [test] extra); skipped with the reason where one is missing.
"""
import importlib.util
import shutil

import pytest

webdriver = pytest.importorskip("selenium.webdriver", reason="Selenium is not installed (pip install '.[test]')")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


@pytest.fixture(scope="module")
def browser():
    binary = next((found for name in BROWSERS if (found := shutil.which(name))), None)
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        pytest.skip("Chromium or chromedriver not found: `apt-get install chromium chromium-driver` "
                    "(make setup installs them when run as root)")
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1200,900"):
        options.add_argument(argument)
    options.binary_location = binary
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(driver_path))
    yield driver
    driver.quit()


def _console_errors(driver):
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def _rows(driver):
    """(kind, count) of the index's visible rows, top to bottom."""
    rows = driver.find_elements(By.CSS_SELECTOR, "#findings tbody tr")
    return [(row.get_attribute("data-kind"), int(row.find_elements(By.TAG_NAME, "td")[5].text))
            for row in rows if row.is_displayed()]


def test_index_sorts_filters_and_leads_to_the_source_line_and_back(browser, seed_report, seed_lines):
    browser.get((seed_report / "index.html").as_uri())
    everything = _rows(browser)
    assert len(everything) > 2

    count_header = browser.find_element(By.XPATH, "//table[@id='findings']//th[text()='count']")
    count_header.click()
    assert [count for _, count in _rows(browser)] == sorted(count for _, count in everything)
    count_header.click()
    assert [count for _, count in _rows(browser)] == sorted((count for _, count in everything), reverse=True)

    Select(browser.find_element(By.ID, "filter-kind")).select_by_value("item")
    shown = _rows(browser)
    assert shown and {kind for kind, _ in shown} == {"item"}
    assert browser.find_element(By.ID, "shown").text == str(len(shown))
    Select(browser.find_element(By.ID, "filter-kind")).select_by_value("")
    box = browser.find_element(By.ID, "filter-text")
    box.send_keys("state_dict_reload")
    assert {kind for kind, _ in _rows(browser)} == {"state_dict_reload"}
    box.send_keys(Keys.CONTROL, "a", Keys.BACKSPACE)
    assert len(_rows(browser)) == len(everything)

    row = browser.find_element(By.CSS_SELECTOR, "#findings tr[data-kind='item']")
    row.find_element(By.PARTIAL_LINK_TEXT, f"seed_l2c.py:{seed_lines['item']}").click()
    assert browser.current_url.endswith(f".html#L{seed_lines['item']}")
    line = browser.find_element(By.ID, f"L{seed_lines['item']}")
    assert "error" in line.get_attribute("class").split() and ".item()" in line.text
    if importlib.util.find_spec("libcst") is not None:  # the fix's diff is shown, open, under the line
        diff = browser.find_element(By.CSS_SELECTOR, f"tr#L{seed_lines['item']} + tr.notes-row details.diff pre")
        assert diff.is_displayed() and "+                        theta_next[name] -= model.w[i][j] * delta" in diff.text

    browser.find_element(By.CSS_SELECTOR, "div.finding.error a[href^='index.html#f']").click()
    assert browser.current_url.split("/")[-1].startswith("index.html#f")
    target = browser.current_url.split("#")[1]
    assert browser.find_element(By.ID, target).get_attribute("data-kind") == "item"
    assert _console_errors(browser) == []


def test_names_and_source_of_the_script_never_run(browser, hostile_report):
    browser.get((hostile_report / "index.html").as_uri())
    link = browser.find_element(By.CSS_SELECTOR, "#findings tbody a")
    assert "<img src=x onerror=window.pwned=1>.py:4" in link.text
    link.click()
    assert "window.pwned=2</script>" in browser.find_element(By.ID, "L4").text
    assert browser.execute_script("return window.pwned === undefined")
    assert _console_errors(browser) == []
