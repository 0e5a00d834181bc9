"""The reference TUF client (python-tuf's ngclient.Updater) against `patchctl export`
served over loopback HTTP: plain and encrypted apps, key rotation, revocation, channels."""

import hashlib
import json

import pytest
from cryptography.exceptions import InvalidTag
from hotpatch_testing import cached_version, decrypt, digests, fetch, repo_updater


def assert_plain_target(updater, path, expected: bytes, patch, rollout):
    info, body = fetch(updater, path)
    assert info is not None, f"{path} is not listed in targets"
    assert body == expected, f"{path}: downloaded bytes differ from the published file"
    custom = info.custom
    assert custom["patch"] == patch and custom["rollout"] == rollout
    assert "encryption" not in custom
    assert custom["plaintext"] == digests(expected)
    assert info.length == len(expected)
    assert info.hashes == {"md5": hashlib.md5(expected).hexdigest(),
                           "sha256": hashlib.sha256(expected).hexdigest()}


def assert_not_listed(updater, *paths):
    for path in paths:
        assert updater.get_targetinfo(path) is None, f"{path} should not be listed"


# -- 1. plain app ----------------------------------------------------------------------------

def test_updater_downloads_every_active_patch_of_a_plain_app(workspace, http_server, tmp_path):
    ws = workspace
    ws.create_app("demo")
    p23_1, b23_1 = ws.publish("demo", "2.3", "defineClass('A', {});\n")
    p23_2, b23_2 = ws.publish("demo", "2.3", "defineClass('A', {fix: function() { return 2; }});\n", rollout=30)
    ws.publish("demo", "2.4", "console.log('2.4 first');\n")
    _, b24_2 = ws.publish("demo", "2.4", "console.log('2.4 second, supersedes first');\n")
    _, b10 = ws.publish("demo", "10.0.0-beta.2", "// \u00e9t\u00e9 \u4e2d\u6587 \U0001F600\n")
    assert (p23_1["patch"], p23_2["patch"], p23_2["rollout"]) == (1, 2, 30)

    base = http_server(ws.export("demo"))
    updater = repo_updater(base, tmp_path / "client" / "metadata", ws.root_json("demo"))
    updater.refresh()

    # The 100% patch and the newer 30% one are listed side by side.
    assert_plain_target(updater, "2.3/1/main.js", b23_1, patch=1, rollout=100)
    assert_plain_target(updater, "2.3/2/main.js", b23_2, patch=2, rollout=30)
    assert_plain_target(updater, "2.4/2/main.js", b24_2, patch=2, rollout=100)
    assert_plain_target(updater, "10.0.0-beta.2/1/main.js", b10, patch=1, rollout=100)
    # 2.4 patch 1 is still active but superseded by a newer 100% patch.
    assert_not_listed(updater, "2.4/1/main.js", "2.5/1/main.js", "2.3/3/main.js")
    # --active is what devices are offered now: the superseded patch is not revoked, but not served.
    active = {(p["appVersion"], p["patch"]) for p in ws.json("list", "--app", "demo", "--active")}
    assert ("2.4", 1) not in active and ("2.4", 2) in active


def test_updater_without_patches_sees_an_empty_targets_role(workspace, http_server, tmp_path):
    workspace.create_app("empty")
    base = http_server(workspace.export("empty"))
    updater = repo_updater(base, tmp_path / "client" / "metadata", workspace.root_json("empty"))
    updater.refresh()
    assert_not_listed(updater, "1.0/1/main.js")


# -- 2. encrypted app ------------------------------------------------------------------------

def test_updater_downloads_encrypted_patches_that_decrypt_with_the_content_key(
        workspace, http_server, tmp_path):
    ws = workspace
    ws.create_app("vault", encrypt=True)
    key = ws.content_key("vault")
    published = {
        ("3.1", 1): ws.publish("vault", "3.1", "require('UIView'); // secret fix 1\n")[1],
        ("3.1", 2): ws.publish("vault", "3.1", "require('UIView'); // secret fix 2\n", rollout=30)[1],
        ("3.2.1", 1): ws.publish("vault", "3.2.1", "var n = [" + ",".join(str(i) for i in range(2000)) + "];\n")[1],
    }
    export = ws.export("vault")
    base = http_server(export)
    updater = repo_updater(base, tmp_path / "client" / "metadata", ws.root_json("vault"))
    updater.refresh()

    for (version, patch), plaintext in published.items():
        info, served = fetch(updater, f"{version}/{patch}/main.js")
        assert info is not None
        assert served != plaintext and len(served) == len(plaintext) + 12 + 16
        assert info.length == len(served)
        assert info.hashes["sha256"] == hashlib.sha256(served).hexdigest()
        custom = info.custom
        assert custom["patch"] == patch
        assert custom["encryption"] == {"alg": "A256GCM", "keyid": hashlib.sha256(key).hexdigest()}
        opened = decrypt(key, "vault", version, patch, served)
        assert opened == plaintext
        assert custom["plaintext"] == digests(opened)
        # The AAD binds the bundle to its app, version and patch number.
        for other in [("vault", version, patch + 1), ("vault", "9.9", patch), ("other", version, patch)]:
            with pytest.raises(InvalidTag):
                decrypt(key, *other, served)
    assert fetch(updater, "3.1/1/main.js")[0].custom["rollout"] == 100
    assert fetch(updater, "3.1/2/main.js")[0].custom["rollout"] == 30

    # patchctl's own verifier agrees, with decryption.
    result = ws.run("verify", "--repo", export, "--root", ws.root_file("vault"),
                    "--app", "vault", "--key", ws.keys / "vault" / "content.key", registry=False)
    assert result.rc == 0, result.stderr


# -- 3. key rotation -------------------------------------------------------------------------

def test_original_root_still_trusts_the_repository_after_rotating_every_key(
        workspace, http_server, tmp_path):
    ws = workspace
    ws.create_app("demo")
    original_root = ws.root_json("demo")
    _, b23_1 = ws.publish("demo", "2.3", "console.log('2.3 p1');\n")
    _, b23_2 = ws.publish("demo", "2.3", "console.log('2.3 p2');\n", rollout=30)
    _, b30_1 = ws.publish("demo", "3.0", "console.log('3.0 p1');\n")

    # A device that refreshed before any rotation and keeps its metadata directory.
    early_dir = tmp_path / "early" / "metadata"
    before = repo_updater(http_server(ws.export("demo")), early_dir, original_root)
    before.refresh()
    assert_plain_target(before, "2.3/2/main.js", b23_2, patch=2, rollout=30)
    assert cached_version(early_dir) == 1

    rotations = [ws.json("keys", "rotate", "--app", "demo", "--role", role)
                 for role in ("root", "root", "timestamp", "targets", "snapshot")]
    assert [r["rootVersion"] for r in rotations] == [2, 3, 4, 5, 6]
    for r in rotations:
        assert r["newKeyID"] not in r["oldKeyIDs"]
    # New content signed with the rotated targets key.
    _, b30_2 = ws.publish("demo", "3.0", "console.log('3.0 p2, after rotation');\n", rollout=50)

    export = ws.export("demo")
    roots = sorted(p.name for p in (export / "metadata").glob("*.root.json"))
    assert roots == [f"{n}.root.json" for n in range(1, 7)]
    assert (export / "metadata" / "1.root.json").read_bytes() == original_root.rstrip(b"\n")
    base = http_server(export)

    # A new install that embeds only the original 1.root.json follows the chain 1 -> 6.
    fresh_dir = tmp_path / "fresh" / "metadata"
    fresh = repo_updater(base, fresh_dir, original_root)
    fresh.refresh()
    assert cached_version(fresh_dir) == 6
    # And the device that had refreshed before the rotation refreshes from its cache.
    again = repo_updater(base, early_dir, None)
    again.refresh()
    assert cached_version(early_dir) == 6

    for updater in (fresh, again):
        assert_plain_target(updater, "2.3/1/main.js", b23_1, patch=1, rollout=100)
        assert_plain_target(updater, "2.3/2/main.js", b23_2, patch=2, rollout=30)
        assert_plain_target(updater, "3.0/1/main.js", b30_1, patch=1, rollout=100)
        assert_plain_target(updater, "3.0/2/main.js", b30_2, patch=2, rollout=50)

    # The root that signs now is neither of the two it replaced.
    root6 = json.loads((export / "metadata" / "6.root.json").read_bytes())["signed"]
    assert root6["roles"]["root"]["keyids"] == [rotations[1]["newKeyID"]]
    for role, rotation in zip(("timestamp", "targets", "snapshot"), rotations[2:]):
        assert root6["roles"][role]["keyids"] == [rotation["newKeyID"]]


# -- 4. revocation ---------------------------------------------------------------------------

def test_revoked_patch_disappears_and_previous_full_rollout_patch_is_served_again(
        workspace, http_server, tmp_path):
    ws = workspace
    ws.create_app("demo")
    _, b1 = ws.publish("demo", "2.3", "console.log('p1');\n")
    _, b2 = ws.publish("demo", "2.3", "console.log('p2');\n")
    _, b3 = ws.publish("demo", "2.3", "console.log('p3 canary');\n", rollout=30)
    _, other = ws.publish("demo", "2.4", "console.log('2.4 untouched');\n")
    root = ws.root_json("demo")
    metadata_dir = tmp_path / "device" / "metadata"

    def refreshed():
        updater = repo_updater(http_server(ws.export("demo")), metadata_dir, None if metadata_dir.exists() else root)
        updater.refresh()
        return updater

    u = refreshed()
    assert_not_listed(u, "2.3/1/main.js")  # superseded by patch 2 at 100%
    assert_plain_target(u, "2.3/2/main.js", b2, patch=2, rollout=100)
    assert_plain_target(u, "2.3/3/main.js", b3, patch=3, rollout=30)

    revoked = ws.json("revoke", "--app", "demo", "--app-version", "2.3", "--patch", "2")
    assert [p["state"] for p in revoked] == ["revoked"]
    u = refreshed()
    assert_not_listed(u, "2.3/2/main.js")
    assert_plain_target(u, "2.3/1/main.js", b1, patch=1, rollout=100)
    assert_plain_target(u, "2.3/3/main.js", b3, patch=3, rollout=30)
    assert_plain_target(u, "2.4/1/main.js", other, patch=1, rollout=100)

    ws.json("revoke", "--app", "demo", "--app-version", "2.3", "--patch", "3")
    u = refreshed()
    assert_not_listed(u, "2.3/2/main.js", "2.3/3/main.js")
    assert_plain_target(u, "2.3/1/main.js", b1, patch=1, rollout=100)

    # Revoking the whole version leaves nothing for it; other versions are unaffected.
    ws.json("revoke", "--app", "demo", "--app-version", "2.3", "--all", "--yes")
    u = refreshed()
    assert_not_listed(u, "2.3/1/main.js", "2.3/2/main.js", "2.3/3/main.js")
    assert_plain_target(u, "2.4/1/main.js", other, patch=1, rollout=100)
    assert {p["appVersion"] for p in ws.json("list", "--app", "demo", "--active")} == {"2.4"}


def test_rollout_change_is_signed_into_targets(workspace, http_server, tmp_path):
    ws = workspace
    ws.create_app("demo")
    _, b1 = ws.publish("demo", "2.3", "console.log('p1');\n")
    _, b2 = ws.publish("demo", "2.3", "console.log('p2');\n", rollout=10)
    ws.json("rollout", "--app", "demo", "--app-version", "2.3", "--patch", "2", "--percent", "60")
    u = repo_updater(http_server(ws.export("demo")), tmp_path / "c" / "metadata", ws.root_json("demo"))
    u.refresh()
    assert_plain_target(u, "2.3/1/main.js", b1, patch=1, rollout=100)
    assert_plain_target(u, "2.3/2/main.js", b2, patch=2, rollout=60)


# -- channels --------------------------------------------------------------------------------

def test_python_tuf_fetches_every_channels_patches_from_an_export_and_from_patchd(workspace, http_server, start, tmp_path):
    ws = workspace
    ws.create_app("demo")
    _, prod = ws.publish("demo", "2.3", "production();\n")
    staged, stage = ws.publish("demo", "2.3", "staging();\n", channel="staging")
    _, qa = ws.publish("demo", "2.3", "qa();\n", channel="qa", rollout=40)
    assert staged["targetPath"] == "staging/2.3/2/main.js" and staged["channel"] == "staging"
    server = start(ws)
    for base in (http_server(ws.export("demo")), f"{server.url}/v1/apps/demo"):
        updater = repo_updater(base, tmp_path / hashlib.sha256(base.encode()).hexdigest()[:8] / "metadata", ws.root_json("demo"))
        updater.refresh()
        for path, body, patch, rollout in [("2.3/1/main.js", prod, 1, 100), ("staging/2.3/2/main.js", stage, 2, 100),
                                           ("qa/2.3/3/main.js", qa, 3, 40)]:
            info, downloaded = fetch(updater, path)
            assert info is not None, f"{base}: {path} not listed"
            assert downloaded == body and info.custom["patch"] == patch and info.custom["rollout"] == rollout
            assert info.custom["plaintext"] == digests(body)
        assert updater.get_targetinfo("2.3/2/main.js") is None, "a staging patch is never listed under a production path"


def test_python_tuf_follows_a_delegated_staging_role_published_without_the_targets_key(workspace, http_server, start, tmp_path):
    ws = workspace
    ws.create_app("demo")
    _, prod = ws.publish("demo", "2.3", "production();\n")
    ws.ok("channels", "create", "staging", "--app", "demo")
    ws.ok("keys", "delegate", "--app", "demo", "--channel", "staging", "--name", "qa")
    for key in (ws.keys / "demo").glob("targets.*.pem"):
        key.unlink()  # the top-level targets key goes offline; the registry keeps qa's key
    _, stage = ws.publish("demo", "2.3", "staging();\n", channel="staging")
    server = start(ws)
    for base in (http_server(ws.export("demo")), f"{server.url}/v1/apps/demo"):
        updater = repo_updater(base, tmp_path / hashlib.sha256(base.encode()).hexdigest()[:8] / "metadata", ws.root_json("demo"))
        updater.refresh()
        for path, body in [("2.3/1/main.js", prod), ("staging/2.3/2/main.js", stage)]:
            info, downloaded = fetch(updater, path)
            assert info is not None, f"{base}: {path} not listed"
            assert downloaded == body
        assert "qa" in updater._trusted_set, "the staging target came through the delegated role"
