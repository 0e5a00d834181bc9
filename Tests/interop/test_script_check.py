"""The script check (issue 45) through the binaries: patchctl and patchd with the real worker
(patchcheck, JavaScriptCore), on the demo's script and its slips, locally and over HTTP, plain and
encrypted; `check`'s exit codes; a hostile top level that never stalls patchd; verify --check."""
import json
import os
import threading
import time

from hotpatch_testing import REPO_ROOT, Workspace, assert_cli_error
from patchd_support import Patchd, request, token_file

DEMO = (REPO_ROOT / "patches" / "demo" / "2.3" / "main.js").read_text()
MANIFEST = REPO_ROOT / "patches" / "demo" / "2.3" / "manifest.json"
# One lower-case letter off the selector the fix overrides: valid JavaScript that does nothing.
TYPO = DEMO.replace("tableView_cellForRowAtIndexPath:", "tableView_cellForRowAtIndexpath:")
MEANT = "did you mean tableView:cellForRowAtIndexPath: (tableView_cellForRowAtIndexPath, 2 arguments)"


def demo_workspace(tmp_path, encrypt=False):
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo", encrypt=encrypt)
    ws.ok("apps", "throttle", "demo", "--ip-rate", "off")
    ws.ok("apps", "manifest", "--app", "demo", "--app-version", "2.3", MANIFEST)
    return ws


def test_a_typo_is_refused_locally_and_over_http_then_published_with_skip_check_and_audited(tmp_path):
    ws = demo_workspace(tmp_path)
    refused = ws.run("publish", "--app", "demo", "--app-version", "2.3", ws.write_file(TYPO))
    assert_cli_error(refused, 2, "main.js:6:12: error", MEANT, "nothing was published", "--skip-check")
    assert ws.json("list", "--app", "demo") == []
    publisher = ws.token("--app", "demo", "--name", "ci")
    tokens = token_file(ws, publisher, "publisher.token")
    server = Patchd(ws)
    try:
        remote = ws.run("publish", "--server", server.url, "--token-file", tokens, "--app", "demo", "--app-version", "2.3",
                        ws.write_file(TYPO), registry=False)
        assert_cli_error(remote, 2, "server refused (422)", MEANT)
        raw = request(server.url, "/v1/apps/demo/patches?appVersion=2.3", method="POST", body=TYPO.encode(),
                      headers={"Authorization": f"Bearer {publisher}"})
        assert raw.status == 422, raw.body
        answer = json.loads(raw.body)
        assert answer["error"]["code"] == "check_failed"
        assert answer["check"]["outcome"] == "failed" and answer["check"]["native"] == "checked"
        finding = answer["check"]["findings"][0]
        assert (finding["code"], finding["line"], finding["column"]) == ("selector-typo", 6, 12)
        assert finding["suggestions"] == ["tableView:cellForRowAtIndexPath:"]
        assert ws.json("list", "--app", "demo") == [], "nothing stored"

        skipped = ws.run("publish", "--server", server.url, "--token-file", tokens, "--app", "demo", "--app-version", "2.3",
                         "--skip-check", "QA signed off: the old selector is still called", ws.write_file(TYPO), registry=False)
        assert skipped.rc == 0, skipped.stderr
        assert "released past the script check (skipped: 1 error)" in skipped.stderr
        clean = ws.run("publish", "--server", server.url, "--token-file", tokens, "--app", "demo", "--app-version", "2.3",
                       ws.write_file(DEMO), registry=False)
        assert clean.rc == 0 and clean.stderr == "", clean.stderr
        listed = ws.run("list", "--server", server.url, "--token-file", tokens, "--app", "demo", registry=False)
        assert listed.rc == 0, listed.stderr
        rows = {line.split()[3]: line for line in listed.stdout.splitlines()[1:] if line.startswith("demo ")}
        assert "skipped: 1 error" in rows["1"] and " passed " in rows["2"], listed.stdout
    finally:
        server.stop()
    event = [e for e in ws.json("audit", "--app", "demo")["events"] if e["action"] == "patch.publish"][0]
    check = event["details"]["check"]
    assert check["skipReason"] == "QA signed off: the old selector is still called"
    assert check["findings"][0]["code"] == "selector-typo" and check["errors"] == 1


def test_an_encrypted_app_is_checked_before_it_is_sealed(tmp_path):
    ws = demo_workspace(tmp_path, encrypt=True)
    assert_cli_error(ws.run("publish", "--app", "demo", "--app-version", "2.3", ws.write_file("require('UIView');\nvar broken = ;\n")),
                     2, "main.js:2:14: error: SyntaxError: Unexpected token ';'")
    published, _ = ws.publish("demo", "2.3", DEMO)
    assert published["encrypted"] and published["check"]["outcome"] == "passed" and published["check"]["native"] == "checked"


def test_check_exits_0_clean_1_with_findings_2_when_it_cannot_run(tmp_path):
    ws = demo_workspace(tmp_path)
    clean = ws.run("check", "--app", "demo", "--app-version", "2.3", ws.write_file(DEMO))
    assert clean.rc == 0 and "check: passed (native check against 2.3's manifest)" in clean.stdout, clean.stdout + clean.stderr
    typo = ws.run("check", "--app", "demo", "--app-version", "2.3", ws.write_file(TYPO))
    assert typo.rc == 1 and MEANT in typo.stdout, typo.stdout
    report = json.loads(ws.run("check", "--app", "demo", "--app-version", "2.3", "--json", ws.write_file(TYPO)).stdout)
    assert report["outcome"] == "failed" and report["findings"][0]["selector"] == "tableView:cellForRowAtIndexpath:"
    # Here alone, with no registry: against a manifest file, or syntax and evaluation only.
    offline = ws.run("check", "--manifest", MANIFEST, ws.write_file(TYPO), registry=False)
    assert offline.rc == 1 and MEANT in offline.stdout
    assert ws.run("check", "--offline", ws.write_file(TYPO), registry=False).rc == 0
    warned = ws.run("check", "--offline", ws.write_file("fixCart();\n"), registry=False)
    assert warned.rc == 1 and "warning: fixCart is not defined" in warned.stdout
    broken = dict(os.environ, HOTPATCH_PATCHCHECK="/nonexistent/patchcheck")
    cannot = ws.run("check", "--offline", ws.write_file(DEMO), registry=False, env=broken)
    assert_cli_error(cannot, 2, "could not run")
    refused = ws.run("publish", "--app", "demo", "--app-version", "2.3", ws.write_file(DEMO), env=broken)
    assert_cli_error(refused, 2, "could not run", "nothing was published")


def test_a_hostile_top_level_is_refused_in_seconds_while_patchd_keeps_answering(tmp_path):
    ws = demo_workspace(tmp_path)
    publisher = ws.token("--app", "demo", "--name", "ci")
    tokens = token_file(ws, publisher, "publisher.token")
    server = Patchd(ws)
    try:
        # (script, what the finding says, whether it runs until a limit stops it)
        for script, needle, endless in [("while (true) {}\n", "s of CPU time", True),
                                        ("defineClass('CartStore', { get items() { while (true) {} } });\n", "s of CPU time", True),
                                        ("var big = 'x'.repeat(1 << 30);\n", "Out of memory", False),
                                        ("function down(n) { return down(n + 1) + 1; }\ndown(0);\n", "Maximum call stack size exceeded", False)]:
            result = {}
            checking = threading.Thread(target=lambda: result.update(raw=request(
                server.url, "/v1/apps/demo/check?appVersion=2.3", method="POST", body=script.encode(),
                headers={"Authorization": f"Bearer {publisher}"})))
            checking.start()
            if endless:
                # While the worker spends its 2 s of CPU, patchd answers a device, its health
                # check and a publisher's read: the check holds neither an I/O thread nor the
                # registry lock. Asserted by order, not by a time a loaded machine could miss.
                time.sleep(0.2)
                assert request(server.url, "/healthz").status == 200
                assert request(server.url, "/v1/apps/demo/versions/2.3/patch", headers={"X-Device-ID": f"phone-{len(script)}"}).status == 204
                assert ws.run("list", "--server", server.url, "--token-file", tokens, "--app", "demo", registry=False).rc == 0
                assert checking.is_alive(), "the answers came only after the check"
            # Bounded by the worker's deadline (10 s) whatever the machine's load.
            checking.join(timeout=60)
            assert not checking.is_alive()
            raw = result["raw"]
            assert raw.status == 200, raw.body
            report = json.loads(raw.body)
            assert report["outcome"] == "failed" and needle in report["findings"][0]["message"], report
    finally:
        code, hung = server.stop()
        assert code == 0 and not hung


def test_verify_check_reruns_the_check_on_what_a_server_serves(tmp_path):
    ws = demo_workspace(tmp_path)
    ws.publish("demo", "2.3", DEMO)
    root = ws.root_file("demo")

    def verify(*extra):
        server = Patchd(ws)
        try:
            return ws.run("verify", "--server", server.url, "--app", "demo", "--root", root, *extra, registry=False)
        finally:
            server.stop()

    ok = verify("--check", "--manifest", MANIFEST)
    assert ok.rc == 0 and "check 2.3/1/main.js: passed (against the manifest)" in ok.stdout, ok.stdout + ok.stderr
    ws.ok("publish", "--app", "demo", "--app-version", "2.3", "--skip-check", "known", ws.write_file(TYPO))
    failed = verify("--check", "--manifest", MANIFEST)
    assert failed.rc == 1 and MEANT in failed.stdout and "check 2.3/2/main.js: 1 error" in failed.stdout, failed.stdout + failed.stderr
    assert verify().rc == 0, "without --check the signatures alone are verified"
    # Without the manifest the typo is valid JavaScript: syntax and evaluation pass.
    assert verify("--check").rc == 0
