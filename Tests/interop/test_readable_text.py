"""Text that cannot lie (issue 20, item 6): release notes, revoke messages, token names and
actors are held to one rule (PatchCore's ReadableText) whichever way they arrive — patchctl's
arguments and $HOTPATCH_ACTOR, or a query over the wire to patchd. A format character (a bidi
override, a zero-width space) or bytes that are not UTF-8 are refused, naming the field and
the code point or byte, and nothing changes.

    PATCHCTL=... PATCHD=... python -m pytest Tests/interop/test_readable_text.py -q
"""
import subprocess

from hotpatch_testing import Result, assert_cli_error, clean_env, spawn
from patchd_support import error_json, request

OVERRIDE = "revoke \u202e3 hctap"


def run_bytes(ws, *args, env=None) -> Result:
    """patchctl with arguments (and environment) as bytes, so invalid UTF-8 reaches it as sent."""
    argv = [str(ws.exe).encode(), *[a if isinstance(a, bytes) else str(a).encode() for a in args],
            *[str(a).encode() for a in [*ws.registry_args, "--keys", ws.keys]]]
    environment = {k.encode(): v.encode() for k, v in clean_env().items()}
    environment.update(env or {})
    proc = spawn(lambda: subprocess.run(argv, capture_output=True, cwd=ws.root, env=environment, timeout=120))
    return Result(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))


def test_cli_refuses_format_characters_and_invalid_utf8_and_changes_nothing(workspace):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "one();")
    bundle = ws.write_file("two();")
    before = ws.stored()
    assert_cli_error(ws.run("publish", "--app", "demo", "--app-version", "2.3", "--message", OVERRIDE, bundle),
                     2, "the message cannot hold U+202E RIGHT-TO-LEFT OVERRIDE (character 8)")
    assert_cli_error(ws.run("revoke", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--message", "a\u2066b"),
                     2, "U+2066 LEFT-TO-RIGHT ISOLATE")
    assert_cli_error(ws.run("tokens", "create", "--all", "--role", "auditor", "--name", "ci\u200bbot"),
                     2, "the token name cannot hold U+200B ZERO WIDTH SPACE")
    assert_cli_error(ws.run("publish", "--app", "demo", "--app-version", "2.3", bundle, env={"HOTPATCH_ACTOR": "ops\u202e"}),
                     2, "$HOTPATCH_ACTOR: the actor cannot hold U+202E RIGHT-TO-LEFT OVERRIDE")
    # Bytes that are not UTF-8: refused before any command runs, not read as U+FFFD.
    assert_cli_error(run_bytes(ws, "publish", "--app", "demo", "--app-version", "2.3", "--message", b"\xc3(", bundle),
                     64, "the value of --message is not valid UTF-8 (byte 0xC3 at offset 0)")
    assert_cli_error(run_bytes(ws, "tokens", "create", "--all", "--role", "auditor", "--name", b"ci\xff"),
                     64, "the value of --name is not valid UTF-8 (byte 0xFF at offset 2)")
    assert_cli_error(run_bytes(ws, "publish", "--app", "demo", "--app-version", "2.3", bundle, env={b"HOTPATCH_ACTOR": b"ops\xed\xa0\x80"}),
                     64, "$HOTPATCH_ACTOR is not valid UTF-8 (byte 0xED at offset 3)")
    assert ws.stored() == before
    assert ws.json("tokens", "list") == []
    # Every script and emoji stays: what was written is what list and audit show.
    ws.ok("publish", "--app", "demo", "--app-version", "2.3", "--message", "修复崩溃 🚑", bundle, env={"HOTPATCH_ACTOR": "Ошибка-бот"})
    assert "demo 2.3 patch 2: 修复崩溃 🚑" in ws.ok("list", "--app", "demo")
    event = ws.json("audit", "--app", "demo")["events"][-1]
    assert event["actor"] == "Ошибка-бот" and event["details"]["message"] == "修复崩溃 🚑"


def test_http_refuses_a_bidi_override_and_invalid_utf8_in_a_message_and_publishes_nothing(workspace, start):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "one();")
    token = ws.token("--app", "demo", "--role", "publisher", "--name", "ci")
    server = start(ws)
    headers = {"Authorization": f"Bearer {token}"}
    before = ws.stored()
    for query, status, needle in [
        ("appVersion=2.3&message=%E2%80%AErevoke", 400, "the message cannot hold U+202E RIGHT-TO-LEFT OVERRIDE (character 1)"),
        ("appVersion=2.3&message=fix%E2%80%8B", 400, "U+200B ZERO WIDTH SPACE"),
        ("appVersion=2.3&message=%C3%28", 400, "the query argument message is not valid UTF-8 (byte 0xC3 at offset 0)"),
        ("appVersion=2.3&dryRun=true&message=ok%ED%A0%80", 400, "the query argument message is not valid UTF-8 (byte 0xED at offset 2)"),
    ]:
        resp = request(server.url, f"/v1/apps/demo/patches?{query}", "POST", headers=headers, body=b"two();")
        assert resp.status == status, (query, resp.status, resp.body)
        assert needle in error_json(resp)["message"], (query, resp.body)
    resp = request(server.url, "/v1/apps/demo/versions/2.3/patches/1/revoke?message=a%E2%81%A6b", "POST", headers=headers)
    assert resp.status == 400 and "U+2066 LEFT-TO-RIGHT ISOLATE" in error_json(resp)["message"]
    assert ws.stored() == before
    resp = request(server.url, "/v1/apps/demo/patches?appVersion=2.3&message=%E4%BF%AE%E5%A4%8D+%F0%9F%9A%91", "POST", headers=headers, body=b"two();")
    assert resp.status == 201 or resp.status == 200, resp.body
    assert "demo 2.3 patch 2: 修复 🚑" in ws.ok("list", "--app", "demo")
