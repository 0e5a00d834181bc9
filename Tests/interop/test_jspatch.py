"""JSPatch Loader compatibility, end to end with independent tools: patchctl writes the
packages, Info-ZIP's unzip/zip and the openssl CLI read and rebuild them, patchd serves them.

    PATCHCTL=... PATCHD=... python -m pytest Tests/interop/test_jspatch.py -q

Needs openssl, zip and unzip on PATH (the Makefile installs them).
"""

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from hotpatch_testing import assert_cli_error, clean_env
from patchd_support import Patchd, poll, request

pytestmark = pytest.mark.skipif(not all(shutil.which(t) for t in ("openssl", "zip", "unzip")),
                                reason="needs openssl, zip and unzip")

SCRIPT = "defineClass('JPViewController', {\n  handleBtn: function(sender) { console.log('patched') }\n})\n"


def tool(*args, stdin=None, cwd=None, env=None) -> bytes:
    """Runs an external tool that must succeed; returns its stdout."""
    proc = subprocess.run([str(a) for a in args], input=stdin, capture_output=True, cwd=cwd,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, f"{' '.join(map(str, args))} -> {proc.returncode}\n{proc.stderr.decode()}"
    return proc.stdout


def unzip_names(path: Path) -> list:
    """The entry names `unzip -l` lists, in order."""
    listing = tool("unzip", "-l", path).decode().splitlines()
    dashes = [i for i, line in enumerate(listing) if line.startswith("---------")]
    assert len(dashes) == 2, listing
    return [re.split(r"\s+", line.strip(), maxsplit=3)[3] for line in listing[dashes[0] + 1:dashes[1]]]


def recover(key: bytes, public_pem: Path) -> str:
    """What the app's loader computes: the RSA public operation with PKCS#1 type-1 unpadding."""
    return tool("openssl", "pkeyutl", "-verifyrecover", "-pubin", "-inkey", public_pem,
                "-pkeyopt", "rsa_padding_mode:pkcs1", stdin=key).decode()


def unpack(package: bytes):
    """(outer entry names, script.zip bytes, key bytes, script.zip entry names, main.js bytes)."""
    outer = zipfile.ZipFile(io.BytesIO(package))
    script_zip = outer.read("script.zip")
    inner = zipfile.ZipFile(io.BytesIO(script_zip))
    return outer.namelist(), script_zip, outer.read("key"), inner.namelist(), inner.read("main.js")


def jspatch_app(ws, name, *extra):
    created = ws.json("apps", "create", name, "--jspatch-rsa", *extra)
    public = ws.root / f"{name}.pub.pem"
    public.write_text(ws.ok("apps", "jspatch-key", name))
    return created, public


def export_jspatch(ws, app, out=None) -> Path:
    out = out or ws.root / f"jspatch-{app}"
    result = ws.run("export", "--app", app, "--out", out, "--format", "jspatch", "--json")
    assert result.rc == 0, result.stderr
    return out


def state(ws) -> dict:
    """Everything a refused command must leave alone: the audit log, the patches and the key files."""
    return {"audit": ws.ok("audit", "--json"), "patches": ws.ok("list", "--json"),
            "keys": sorted(str(p.relative_to(ws.keys)) + ":" + hashlib.sha256(p.read_bytes()).hexdigest()
                           for p in ws.keys.rglob("*") if p.is_file())}


def test_exported_package_verifies_with_openssl_and_unzip_lists_exactly_its_entries(workspace):
    created, public = jspatch_app(workspace, "demo")
    assert created["jspatchRSA"]["bits"] == 2048
    key_file = workspace.keys / "demo" / "jspatch-rsa.pem"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert public.read_text().startswith("-----BEGIN PUBLIC KEY-----\n")
    workspace.publish("demo", "2.3", SCRIPT)
    out = export_jspatch(workspace, "demo")
    package = out / "2.3" / "v1.zip"
    assert unzip_names(package) == ["script.zip", "key"]
    tool("unzip", "-q", package, "-d", workspace.root / "outer")
    script_zip = workspace.root / "outer" / "script.zip"
    assert unzip_names(script_zip) == ["main.js"]
    assert tool("unzip", "-p", script_zip, "main.js") == SCRIPT.encode()
    key = (workspace.root / "outer" / "key").read_bytes()
    assert len(key) == 256, "raw RSA output of a 2048-bit key, not base64"
    assert recover(key, public) == hashlib.md5(script_zip.read_bytes()).hexdigest()
    assert json.loads((out / "2.3" / "latest").read_text()) == {"patch": 1}
    event = json.loads(workspace.ok("audit", "--json"))["events"][0]
    assert event["action"] == "app.create"
    assert event["details"]["jspatchRSA"] == created["jspatchRSA"]


def test_a_package_built_like_packer_php_agrees_in_entries_md5_and_key(workspace):
    """packer.php zips the .js files, takes md5_file of script.zip, openssl_private_encrypt's
    the hex string into `key` and zips both: done here with zip and the openssl CLI, with the
    same key and script."""
    _, public = jspatch_app(workspace, "demo")
    workspace.publish("demo", "2.3", SCRIPT)
    ours = (export_jspatch(workspace, "demo") / "2.3" / "v1.zip").read_bytes()
    private = workspace.keys / "demo" / "jspatch-rsa.pem"

    hand = workspace.root / "hand"
    (hand / "js").mkdir(parents=True)
    (hand / "js" / "main.js").write_text(SCRIPT)
    tool("zip", "-q", "-X", "../script.zip", "main.js", cwd=hand / "js")
    hand_md5 = hashlib.md5((hand / "script.zip").read_bytes()).hexdigest()
    (hand / "key").write_bytes(tool("openssl", "pkeyutl", "-sign", "-inkey", private,
                                    "-pkeyopt", "rsa_padding_mode:pkcs1", stdin=hand_md5.encode()))
    tool("zip", "-q", "-X", "v1.zip", "script.zip", "key", cwd=hand)

    names, script_zip, key, inner_names, main_js = unpack(ours)
    h_names, h_script_zip, h_key, h_inner_names, h_main_js = unpack((hand / "v1.zip").read_bytes())
    assert names == h_names == ["script.zip", "key"]
    assert inner_names == h_inner_names == ["main.js"]
    assert main_js == h_main_js == SCRIPT.encode()
    assert len(key) == len(h_key)
    # What the loader checks holds for both: the key recovers to the MD5 of the script.zip beside it.
    assert recover(key, public) == hashlib.md5(script_zip).hexdigest()
    assert recover(h_key, public) == hand_md5
    # And over our script.zip the CLI computes exactly our key.
    assert key == tool("openssl", "pkeyutl", "-sign", "-inkey", private, "-pkeyopt", "rsa_padding_mode:pkcs1",
                       stdin=hashlib.md5(script_zip).hexdigest().encode())


@pytest.mark.parametrize("form", ["pkcs1", "pkcs8"])
def test_an_existing_pkcs1_or_pkcs8_key_is_imported(workspace, form):
    pkcs8 = workspace.root / "existing.pk8.pem"
    tool("openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", pkcs8)
    key = pkcs8
    if form == "pkcs1":
        key = workspace.root / "existing.pk1.pem"
        tool("openssl", "pkey", "-in", pkcs8, "-traditional", "-out", key)
        assert key.read_text().startswith("-----BEGIN RSA PRIVATE KEY-----")
    expected_public = tool("openssl", "pkey", "-in", pkcs8, "-pubout").decode()
    (workspace.root / "jploader.pub.pem").write_text(expected_public)

    # At creation, and on an app that already exists.
    created, public = jspatch_app(workspace, "fresh", "--import", key)
    assert created["jspatchRSA"]["bits"] == 1024
    assert public.read_text() == expected_public
    workspace.create_app("older")
    workspace.publish("older", "1.0", SCRIPT)
    enabled = workspace.json("apps", "jspatch", "older", "--import", key)
    assert enabled["bits"] == 1024 and enabled["publicKeySha256"] == created["jspatchRSA"]["publicKeySha256"]
    assert workspace.ok("apps", "jspatch-key", "older") == expected_public
    assert json.loads(workspace.ok("audit", "--app", "older", "--json"))["events"][-1]["action"] == "app.jspatch"

    _, script_zip, package_key, _, _ = unpack((export_jspatch(workspace, "older") / "1.0" / "v1.zip").read_bytes())
    assert recover(package_key, workspace.root / "jploader.pub.pem") == hashlib.md5(script_zip).hexdigest()
    objc = workspace.ok("apps", "jspatch-key", "older", "--objc").strip()
    assert objc == '@"' + "\\n".join(expected_public.strip().splitlines()) + '"'


def test_refused_inputs_change_nothing(workspace):
    workspace.create_app("secret", encrypt=True)
    jspatch_app(workspace, "demo")
    workspace.create_app("plain")
    bad = workspace.write_file("-----BEGIN RSA PRIVATE KEY-----\nnope\n-----END RSA PRIVATE KEY-----\n", "bad.pem")
    small = workspace.root / "small.pem"
    tool("openssl", "genrsa", "-out", small, "512")
    public_only = workspace.root / "public.pem"
    tool("openssl", "pkey", "-in", small, "-pubout", "-out", public_only)
    locked = workspace.root / "locked.pem"
    tool("openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024",
         "-aes256", "-pass", "pass:secret", "-out", locked)
    before = state(workspace)

    assert_cli_error(workspace.run("apps", "jspatch", "plain", "--import", bad), 2, "not a PEM private key")
    assert_cli_error(workspace.run("apps", "jspatch", "plain", "--import", small), 2, "512-bit")
    assert_cli_error(workspace.run("apps", "jspatch", "plain", "--import", public_only), 2, "public key")
    assert_cli_error(workspace.run("apps", "jspatch", "plain", "--import", locked), 2, "encrypted")
    assert_cli_error(workspace.run("apps", "jspatch", "plain", "--import", workspace.root / "missing.pem"), 2, "missing.pem")
    assert_cli_error(workspace.run("apps", "jspatch", "secret"), 2, "encrypted")
    assert_cli_error(workspace.run("apps", "jspatch", "demo"), 2, "already has a JSPatch key")
    assert_cli_error(workspace.run("apps", "jspatch", "nope"), 2, "unknown app")
    assert_cli_error(workspace.run("apps", "create", "both", "--encrypt", "--jspatch-rsa"), 64, "--encrypt")
    assert_cli_error(workspace.run("apps", "create", "half", "--import", small), 64, "--jspatch-rsa")
    assert_cli_error(workspace.run("apps", "create", "tiny", "--jspatch-rsa", "--import", small), 2, "512-bit")
    assert_cli_error(workspace.run("apps", "jspatch-key", "plain"), 2, "no JSPatch key")
    assert_cli_error(workspace.run("export", "--app", "plain", "--out", workspace.root / "x", "--format", "jspatch"), 2, "no JSPatch key")
    assert_cli_error(workspace.run("export", "--app", "demo", "--out", workspace.root / "x", "--format", "zip"), 64, "--format")
    assert state(workspace) == before
    assert not (workspace.root / "x").exists()


def test_export_is_reproducible_and_follows_revocations(workspace):
    jspatch_app(workspace, "demo")
    workspace.publish("demo", "2.3", SCRIPT)
    workspace.publish("demo", "2.3", SCRIPT + "// two\n", rollout=25)
    first = export_jspatch(workspace, "demo", workspace.root / "a")
    # Another run, another time zone: the same bytes (DOS dates are written, not local times).
    proc = subprocess.run([str(workspace.exe), "export", "--app", "demo", "--out", workspace.root / "b", "--format", "jspatch",
                           *workspace.registry_args, "--keys", workspace.keys],
                          env={**clean_env(), "TZ": "Pacific/Kiritimati"}, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    for name in ("v1.zip", "v2.zip", "latest"):
        assert (first / "2.3" / name).read_bytes() == (workspace.root / "b" / "2.3" / name).read_bytes()
    assert json.loads((first / "2.3" / "latest").read_text()) == {"patch": 1}, "a static host only offers full rollouts"

    workspace.ok("revoke", "--app", "demo", "--app-version", "2.3", "--all", "--yes")
    summary = json.loads(workspace.ok("export", "--app", "demo", "--out", first, "--format", "jspatch", "--json"))
    assert summary["packages"] == 0 and summary["removed"] == 3
    assert sorted(p.name for p in (first / "2.3").iterdir()) == []


def test_patchd_serves_packages_and_latest_with_rollout_and_throttling(workspace):
    _, public = jspatch_app(workspace, "demo")
    workspace.create_app("plain")
    workspace.publish("demo", "2.3", SCRIPT)
    exported = (export_jspatch(workspace, "demo") / "2.3" / "v1.zip").read_bytes()
    server = Patchd(workspace)
    try:
        root_url = f"{server.url}/jspatch/demo"
        package = request(root_url, "/jspatch/demo/2.3/v1.zip")
        assert package.status == 200
        assert package.headers["Content-Type"] == "application/zip"
        assert package.body == exported
        _, script_zip, key, _, main_js = unpack(package.body)
        assert main_js == SCRIPT.encode()
        assert recover(key, public) == hashlib.md5(script_zip).hexdigest()

        latest = request(server.url, "/jspatch/demo/2.3/latest", headers={"X-Device-ID": "phone-1"})
        assert latest.status == 200 and json.loads(latest.body) == {"patch": 1}
        again = request(server.url, "/jspatch/demo/2.3/latest", headers={"X-Device-ID": "phone-1"})
        assert again.status == 429 and int(again.headers["Retry-After"]) > 0
        assert request(server.url, "/jspatch/demo/2.4/latest").status == 204
        assert request(server.url, "/jspatch/demo/2.3/v2.zip").status == 404
        assert request(server.url, "/jspatch/plain/2.3/latest").status == 404
        assert request(server.url, "/jspatch/demo/2.3/v01.zip").status == 400

        # patchctl gives the plain app a key while patchd runs: served within a reload.
        workspace.publish("plain", "1.0", SCRIPT)
        workspace.ok("apps", "jspatch", "plain")
        poll(lambda: request(server.url, "/jspatch/plain/1.0/v1.zip").status == 200, timeout=5)
        # A revocation withdraws the package at once.
        workspace.ok("revoke", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--yes")
        poll(lambda: request(server.url, "/jspatch/demo/2.3/v1.zip").status == 404, timeout=5)
    finally:
        code, hung = server.stop()
        assert code == 0 and not hung
