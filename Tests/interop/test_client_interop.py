"""The Swift client (driven through `patchctl fetch`) reads a repository that python-tuf's
own tuf.api wrote, served by a plain static web server in hotpatch's URL layout."""
import json
import os

import pytest
from test_cli_signing import build_python_repo

PAYLOAD = b"defineClass('FromPython', { run: function() { return 42; } });\n"


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
def test_client_reads_a_repository_written_by_python_tuf(patchctl, tmp_path, http_server, encrypted):
    key = os.urandom(32) if encrypted else None
    site = tmp_path / "site"
    repo = site / "v1" / "apps" / "pyapp"
    root = build_python_repo(repo, PAYLOAD, content_key=key)
    base = http_server(site)
    args = ["fetch", "--server", base, "--app", "pyapp", "--app-version", "2.3", "--device-id", "phone-1",
            "--root", root, "--cache", tmp_path / "cache", "--json"]
    if encrypted:
        (tmp_path / "content.key").write_text(key.hex() + "\n")
        args += ["--key", tmp_path / "content.key"]
    result = patchctl(*args)
    assert result.rc == 0, result.stdout + result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["outcome"] == "updated" and outcome["patch"] == 1
    assert (tmp_path / "cache" / "pyapp" / "2.3" / "main.js").read_bytes() == PAYLOAD

    again = patchctl(*args, "--force")
    assert again.rc == 0 and json.loads(again.stdout)["outcome"] == "unchanged"


def test_client_refuses_a_python_repository_whose_target_was_tampered(patchctl, tmp_path, http_server):
    site = tmp_path / "site"
    repo = site / "v1" / "apps" / "pyapp"
    root = build_python_repo(repo, PAYLOAD)
    for path in (repo / "targets" / "2.3" / "1").iterdir():
        path.write_bytes(PAYLOAD.replace(b"42", b"66"))
    base = http_server(site)
    result = patchctl("fetch", "--server", base, "--app", "pyapp", "--app-version", "2.3", "--device-id", "phone-1",
                      "--root", root, "--cache", tmp_path / "cache", "--json")
    assert result.rc == 1
    assert json.loads(result.stdout)["outcome"] == "failed"
    assert not (tmp_path / "cache" / "pyapp" / "2.3" / "main.js").exists()
