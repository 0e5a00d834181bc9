"""A device's checks are its own (issue 43, item 4). Before: another client sending the victim's
X-Device-ID 5 times a second left it 1 answered check in 45 s (interval 10 s), and took the one
check a revoke grants it. PatchClient (here `patchctl fetch`) now sends a per-install
X-Device-Secret with its timestamp request, and patchd meters ID and secret together; clients
without the header (python-tuf, raw HTTP) keep the rules they had."""

import json
import secrets
import threading
import time

from front_door_support import answered, msg
from hotpatch_testing import repo_updater
from patchd_support import error_json, request, remote, token_file
from raw_http import json_error

TIMESTAMP = "/v1/apps/demo/metadata/timestamp.json"
VICTIM = "phone-7"


class Attacker:
    """Sends timestamp.json with the victim's ID about 5 times a second, half without a secret and
    half with one of its own, until stopped; `burst()` sends a few at once (the moment a slot
    reopens is the moment an attacker who knows the interval aims at)."""

    def __init__(self, url):
        self.url = url
        self.statuses = []
        self._stop = threading.Event()
        self._secret = secrets.token_urlsafe(32)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _send(self, with_secret):
        headers = {"X-Device-ID": VICTIM, "X-App-Version": "2.3"}
        if with_secret:
            headers["X-Device-Secret"] = self._secret
        self.statuses.append(request(self.url, TIMESTAMP, headers=headers).status)

    def burst(self, n=6):
        for i in range(n):
            self._send(i % 2 == 1)

    def _run(self):
        i = 0
        while not self._stop.wait(0.2):
            self._send(i % 2 == 1)
            i += 1

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def fetch(ws, server, cache, *extra):
    out = ws.ok("fetch", "--server", server.url, "--app", "demo", "--app-version", "2.3", "--device-id", VICTIM,
                "--root", ws.root_file("demo"), "--cache", cache, "--min-interval", "0", "--json", *extra, registry=False)
    return json.loads(out)


def demo(ws, interval):
    ws.create_app("demo")
    ws.publish("demo", "2.3", "one();\n")
    ws.publish("demo", "2.3", "two();\n")
    ws.ok("apps", "throttle", "demo", "--min-interval", str(interval), "--ip-rate", "off")


def test_the_victim_gets_its_check_each_time_its_interval_passes_while_its_id_is_hammered(workspace, start, tmp_path):
    ws = workspace
    interval = 3
    demo(ws, interval)
    server = start(ws)
    cache = tmp_path / "cache"
    assert fetch(ws, server, cache)["patch"] == 2
    secret = (cache / "demo" / "device-secret").read_text()
    assert len(secret.strip()) == 64 and (cache / "demo" / "device-secret").stat().st_mode & 0o777 == 0o600
    with Attacker(server.url) as attacker:
        for _ in range(3):
            # Past the victim's interval since its last check (second-grained on the server).
            time.sleep(interval + 1)
            attacker.burst()
            answer = fetch(ws, server, cache)
            assert answer["outcome"] == "unchanged" and answer["patch"] == 2, answer
        attacker.burst()
        assert fetch(ws, server, cache, "--force")["outcome"] == "throttled", "its own interval still holds"
    assert 429 in attacker.statuses and 200 in attacker.statuses, attacker.statuses
    assert (cache / "demo" / "device-secret").read_text() == secret, "one secret per installation"


def test_the_victims_forced_check_right_after_a_revoke_is_answered_while_its_id_is_hammered(workspace, start, tmp_path):
    ws = workspace
    demo(ws, 3600)
    server = start(ws)
    token = token_file(ws, ws.token("--app", "demo"), "publisher")
    cache = tmp_path / "cache"
    assert fetch(ws, server, cache)["patch"] == 2
    with Attacker(server.url) as attacker:
        attacker.burst()
        assert fetch(ws, server, cache, "--force")["outcome"] == "throttled", "inside the hour"
        result = remote(ws, server, token, "revoke", "--app", "demo", "--app-version", "2.3", "--patch", "2")
        assert result.rc == 0, result
        # The attacker's first request after the revoke is the one that used to take the pass.
        attacker.burst()
        landed = fetch(ws, server, cache, "--force")
        assert landed["outcome"] == "updated" and landed["patch"] == 1, landed
        attacker.burst()
        assert fetch(ws, server, cache, "--force")["outcome"] == "throttled", "one lifted check per change"


def test_clients_without_the_header_are_served_under_the_rules_they_had_and_a_malformed_secret_is_400(workspace, start, tmp_path):
    ws = workspace
    demo(ws, 3600)
    server = start(ws)
    # python-tuf sends no device headers: only the per-IP bucket applies, every refresh is served.
    for n in range(2):
        updater = repo_updater(server.app_url("demo"), tmp_path / f"tuf-{n}", bootstrap=ws.root_file("demo").read_bytes())
        updater.refresh()
        assert updater.get_targetinfo("2.3/2/main.js") is not None
    # A raw client with an ID and no secret is metered by its ID, as before.
    assert request(server.url, TIMESTAMP, headers={"X-Device-ID": "raw-1"}).status == 200
    throttled = request(server.url, TIMESTAMP, headers={"X-Device-ID": "raw-1"})
    assert throttled.status == 429 and throttled.headers["X-Throttle-Scope"] == "device"
    # The same ID with a secret is another slot: a client that starts sending one is answered.
    assert request(server.url, TIMESTAMP, headers={"X-Device-ID": "raw-1", "X-Device-Secret": "A" * 32}).status == 200
    for bad in ["A" * 31, "A" * 129, "A" * 31 + "=", "A" * 31 + "+"]:
        answer = request(server.url, TIMESTAMP, headers={"X-Device-ID": "raw-2", "X-Device-Secret": bad})
        assert answer.status == 400, bad
        assert "X-Device-Secret must be 32 to 128 characters" in error_json(answer)["message"]
    # On two lines, which one counts would depend on who reads it.
    twice = answered(server.url, msg("GET /v1/apps/demo/versions/2.3/patch HTTP/1.1", "Host: x", "X-Device-ID: raw-3",
                                     "X-Device-Secret: " + "A" * 32, "X-Device-Secret: " + "B" * 32))
    assert "sent once" in json_error(twice, 400)["message"]
