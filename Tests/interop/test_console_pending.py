"""The web console and the two-person rule, in headless Chromium against a real patchd (the
browser and helpers of test_console.py): an app whose production needs 2 of 2 release keys,
a publish signed by one of them waiting for the other, shown as "1 of 2" with the targets it
would sign, rejected from the console; and a rollout made from the console, which patchd
answers 202 (stored, not made), shown as pending and not as done.

    PATCHCTL=… PATCHD=… python -m pytest Tests/interop/test_console_pending.py -q
"""

import pytest
from hotpatch_testing import REPO_ROOT, Workspace
from patchd_support import Patchd
from test_console import By, EC, browser, errors, go, shoot, sign_in, text_in, text_is, visible, wait  # noqa: F401 (browser: a fixture)

DEMO_SCRIPT = (REPO_ROOT / "patches" / "demo" / "2.3" / "main.js").read_text()
PENDING = 3  # patchctl's exit status for a change stored to wait for signatures


@pytest.fixture
def site(tmp_path):
    """demo with two release keys (a, b; 2 of 2, approved by both), patch 1 signed by both,
    then patch 2 published with key a only: change 2, waiting for b. Its own registry and
    patchd for each test, so neither depends on what the other did."""
    ws = Workspace(tmp_path / "ws")
    a, b = ws.root / "a.pem", ws.root / "b.pem"
    for key in (a, b):
        ws.ok("keys", "generate", "--out", key, registry=False)
    created = ws.json("apps", "create", "demo", "--targets-key", f"{a}.pub.json", "--targets-key", f"{b}.pub.json")
    assert created["pending"]["threshold"] == 2, created
    ws.ok("approve", "--app", "demo", str(created["pending"]["id"]), "--key-file", a, "--key-file", b)
    ws.ok("publish", "--app", "demo", "--app-version", "2.3", "--key-file", a, "--key-file", b, ws.write_file(DEMO_SCRIPT))
    second = ws.run("publish", "--app", "demo", "--app-version", "2.3", "--key-file", a, "--message", "needs <b>both</b>",
                    ws.write_file(DEMO_SCRIPT + "\nconsole.log('patch 2');\n"))
    assert second.rc == PENDING, second.stderr
    waiting = ws.json("pending", "--app", "demo")
    assert [c["kind"] for c in waiting] == ["publish"], waiting
    publisher = ws.token("--app", "demo", "--role", "publisher", "--name", "release-erin")
    auditor = ws.token("--all", "--role", "auditor", "--name", "auditor-frank")
    server = Patchd(ws)
    yield {"ws": ws, "server": server, "publisher": publisher, "auditor": auditor, "change": waiting[0], "a": a, "b": b}
    server.stop()


def test_the_pending_publish_is_listed_with_its_targets_and_rejected_from_the_console(site, browser):
    ws, change = site["ws"], site["change"]
    # An auditor sees the change and how a key holder approves it, and no button.
    sign_in(browser, site, site["auditor"])
    text_in(browser, "#who", "auditor-frank")
    go(browser, site, "#/apps/demo")
    card = f'#pending article[data-change="{change["id"]}"]'
    text_in(browser, card, "publish a")
    text_is(browser, f"{card} .signatures", "1 of 2 signatures")
    signer = change["signedBy"][0]
    assert browser.find_element(By.CSS_SELECTOR, f"{card} .signed-by .hash").get_attribute("title") == signer
    text_in(browser, f"{card} .signed-by", signer[:12] + "…")
    text_in(browser, f"{card} .bundle", change["bundleSha256"])
    text_in(browser, f"{card} .approve", f"patchctl approve --app demo {change['id']} --key-file KEY.pem")
    text_in(browser, "#pending", "never holds private keys")
    text_in(browser, card, "needs <b>both</b>")  # the release notes, as text
    assert not browser.find_elements(By.CSS_SELECTOR, "#pending b")
    # The targets come from the metadata to be signed, against what targets lists now: patch 2
    # new, patch 1 (older than a full rollout, so no device could get it) no longer listed.
    new = browser.find_element(By.CSS_SELECTOR, f'{card} tr[data-path="2.3/2/main.js"]')
    signed = change["signed"]["targets"]["2.3/2/main.js"]
    assert signed["hashes"]["sha256"] in new.text and "100 %" in new.text and "new" in new.text
    text_in(browser, f'{card} tr[data-path="2.3/1/main.js"]', "no longer listed")
    assert browser.find_elements(By.CSS_SELECTOR, "button[data-action]") == [], "an auditor is offered no action"
    assert [p["patch"] for p in ws.json("list", "--app", "demo")] == [1], "nothing of it is served"
    shoot(browser, "app-pending", full=True)
    assert errors(browser) == []

    # A publisher rejects it, behind the same red confirmation as a revoke, with a reason.
    browser.find_element(By.ID, "sign-out").click()
    sign_in(browser, site, site["publisher"])
    text_in(browser, "#who", "release-erin")
    go(browser, site, "#/apps/demo")
    visible(browser, f'{card} button[data-action="reject"]').click()
    dialog = visible(browser, "#confirm")
    assert "demo" in dialog.text and str(change["id"]) in dialog.text and "1 of 2" in dialog.text
    ok = browser.find_element(By.ID, "confirm-ok")
    assert ok.text == "Reject" and "danger" in ok.get_attribute("class").split()
    browser.find_element(By.ID, "confirm-message").send_keys("wrong <i>build</i>")
    ok.click()
    text_in(browser, "#notice", f"rejected change {change['id']} of demo")
    text_in(browser, "#pending .none", "Nothing is waiting for signatures.")
    text_in(browser, "#pending", "1 rejected")
    assert not browser.find_elements(By.CSS_SELECTOR, "#pending article")
    assert ws.json("pending", "--app", "demo") == []
    assert [c["state"] for c in ws.json("pending", "--app", "demo", "--all")] == ["approved", "rejected"]  # the release keys, then this

    # The audit log says it in words.
    go(browser, site, "#/audit")
    text_in(browser, "#audit", "change.reject")
    text_in(browser, "#audit", f"change {change['id']} (publish)")
    text_in(browser, "#audit", "reason: wrong <i>build</i>")
    text_in(browser, "#audit", "1 of 2 signatures of the targets keys")
    assert not browser.find_elements(By.CSS_SELECTOR, "#audit i")
    shoot(browser, "audit-change-events", full=True)
    assert errors(browser) == []


def test_a_rollout_from_the_console_is_shown_as_pending_not_done(site, browser):
    ws = site["ws"]
    sign_in(browser, site, site["publisher"])
    text_in(browser, "#who", "release-erin")
    go(browser, site, "#/apps/demo/patches/2.3/1")
    text_is(browser, "#patch-facts .rollout", "100 %")
    visible(browser, 'button[data-action="rollout"]').click()
    percent = visible(browser, "#confirm-percent")
    percent.clear()
    percent.send_keys("50")
    browser.find_element(By.ID, "confirm-ok").click()
    wait(browser, EC.invisibility_of_element_located((By.ID, "confirm")))
    waiting = [c for c in ws.json("pending", "--app", "demo") if c["kind"] == "rollout"]
    # patchd holds neither release key: none of the 2 signatures could be made there.
    assert len(waiting) == 1 and (waiting[0]["missing"], waiting[0]["signedBy"]) == (2, []), waiting
    rollout = waiting[0]
    text_in(browser, "#notice", f"pending: waiting for 2 more signatures (change {rollout['id']})")
    text_in(browser, "#notice", f"patchctl approve --app demo {rollout['id']} --key-file KEY.pem")
    notice = browser.find_element(By.ID, "notice")
    assert "pending" in notice.get_attribute("class").split() and "rollout 100 % → 50 %" not in notice.text
    # Nothing changed: the patch is still at 100 % (the page was drawn again after the answer).
    text_is(browser, "#patch-facts .rollout", "100 %")
    assert ws.json("list", "--app", "demo")[0]["rollout"] == 100
    shoot(browser, "rollout-pending")

    # The app page lists it next to the publish, the rollout's target marked as what changes.
    go(browser, site, "#/apps/demo")
    card = f'#pending article[data-change="{rollout["id"]}"]'
    text_is(browser, f"{card} .signatures", "0 of 2 signatures")
    text_in(browser, f"{card} .signed-by", "none")
    text_in(browser, f'{card} tr[data-path="2.3/1/main.js"]', "rollout 100 % → 50 %")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#pending article")) == 2
    # A revoke goes the same way: stored, listed, and the patch still served.
    browser.find_element(By.CSS_SELECTOR, 'tr[data-patch="2.3/1"] button[data-action="revoke"]').click()
    visible(browser, "#confirm-message").send_keys("bad build")
    browser.find_element(By.ID, "confirm-ok").click()
    # Patch 1 is production's only patch: patchd answers 409 confirmation_required first and
    # the console asks once more before it resends with confirm.
    alert = wait(browser, EC.alert_is_present())
    assert "would leave production serving no patch" in alert.text and "Revoke anyway?" in alert.text, alert.text
    alert.accept()
    text_in(browser, "#notice", "pending: waiting for 2 more signatures (change 4): revoke 2.3 patch 1")
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#pending article")) == 3)
    text_in(browser, '#pending article[data-change="4"] tr[data-path="2.3/1/main.js"]', "no longer listed")
    assert ws.json("list", "--app", "demo")[0]["state"] == "active"
    # Hashes, paths and the approve command wrap: no sideways scrolling at 420 px.
    browser.set_window_size(420, 900)
    wait(browser, lambda d: d.execute_script("return document.documentElement.clientWidth") <= 420)
    widths = browser.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
    shoot(browser, "narrow-app-pending", full=True)
    # The revoke's first send (409, before the console asked again) is the only network error.
    assert errors(browser, allowed=("/patches/1/revoke?message=bad+build",)) == []
