"""The console's app page and the versions devices ask for (issue 44), in headless Chromium
against a real patchd (the browser and helpers of test_console.py): the versions counted on
the check path, most asked first, a version asked for without a patch marked so, and a
publish to several versions shown together.

    PATCHCTL=… PATCHD=… python -m pytest Tests/interop/test_console_versions.py -q
"""

import pytest
from hotpatch_testing import Workspace
from patchd_support import Patchd, poll, request
from test_console import By, browser, errors, go, shoot, sign_in, text_in  # noqa: F401 (browser: a fixture)


@pytest.fixture
def site(tmp_path):
    """demo with patches for 2.3 and 2.3.1 published in one change, devices asking for 2.3
    (4 times), 2.3.1 (twice) and 2.4 (once, no patch), flushed to the registry."""
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    ws.ok("apps", "throttle", "demo", "--ip-rate", "off", "--min-interval", "0")
    ws.ok("publish", "--app", "demo", "--app-version", "2.3,2.3.1", "--yes", ws.write_file("fix();\n"))
    auditor = ws.token("--all", "--role", "auditor", "--name", "auditor-grace")
    server = Patchd(ws, args=["--upkeep-lease", "3"])
    for version, times in (("2.3", 4), ("2.3.1", 2), ("2.4", 1)):
        for _ in range(times):
            assert request(server.url, f"/v1/apps/demo/versions/{version}/patch").status in (200, 204)
    poll(lambda: len(ws.json("apps", "versions", "--app", "demo")["versions"]) == 3, timeout=15)
    yield {"ws": ws, "server": server, "auditor": auditor}
    server.stop()


def test_the_app_page_lists_the_versions_devices_ask_for_and_the_publish_made_together(site, browser):
    sign_in(browser, site, site["auditor"])
    text_in(browser, "#who", "auditor-grace")
    go(browser, site, "#/apps/demo")
    text_in(browser, "#asked", "2.4")
    versions = [r.get_attribute("data-version") for r in browser.find_elements(By.CSS_SELECTOR, "#asked tbody tr")]
    assert versions == ["2.3", "2.3.1", "2.4"]
    checks = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#asked tbody tr td.num")]
    assert checks == ["4", "2", "1"]
    text_in(browser, '#asked tr[data-version="2.4"]', "no patch")
    assert "no patch" not in browser.find_element(By.CSS_SELECTOR, '#asked tr[data-version="2.3"]').text
    seq = next(e["seq"] for e in site["ws"].json("audit", "--app", "demo")["events"] if e["action"] == "patch.publish")
    text_in(browser, "#together", f"Published together (one change, audit seq {seq}): 2.3 patch 1, 2.3.1 patch 1 (production)")
    shoot(browser, "app-versions")
    browser.find_element(By.LINK_TEXT, "2.3.1 patch 1").click()
    text_in(browser, "#patch-facts", "2.3.1")
    assert errors(browser) == []
