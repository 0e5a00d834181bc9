"""`patchctl db copy` (issue 13): a registry moved from SQLite to PostgreSQL and back keeps every
row: the same audit head, the same `verify` result, the same exported bytes, and patchd serves
the copy. A refused copy changes nothing."""

import json
import os
import subprocess
import uuid

import pytest
from hotpatch_testing import assert_cli_error, run_patchctl

BASE = os.environ.get("HOTPATCH_TEST_DATABASE")
pytestmark = pytest.mark.skipif(not BASE, reason="HOTPATCH_TEST_DATABASE is unset: run `make test`")


def new_database():
    """A URL to a new, empty schema in the test cluster's database."""
    schema = "copy_" + uuid.uuid4().hex[:16]
    subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", BASE, "-c", f"CREATE SCHEMA {schema}"], check=True, capture_output=True)
    return f"{BASE}{'&' if '?' in BASE else '?'}options=-csearch_path%3D{schema}"


class Registry:
    """patchctl on one registry: `where` is ["--data", DIR] or ["--database", URL]."""

    def __init__(self, ws, *where):
        self.ws, self.where = ws, list(where)

    def run(self, *args):
        return run_patchctl(self.ws.exe, *args, *self.where, "--keys", self.ws.keys, cwd=self.ws.root)

    def ok(self, *args):
        result = self.run(*args)
        assert result.rc == 0, f"patchctl {args} -> {result.rc}\n{result.stderr}"
        return result.stdout

    def json(self, *args):
        return json.loads(self.ok(*args, "--json"))

    def head(self):
        chain = self.json("audit", "--verify")["chain"]
        assert chain["intact"]
        return chain["events"], chain["head"]

    def exported(self, app, out):
        self.ok("export", "--app", app, "--out", out)
        tree = out / "v1" / "apps" / app
        return tree, {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


def verify(ws, tree, root):
    result = run_patchctl(ws.exe, "verify", "--repo", tree, "--root", root, "--json", cwd=ws.root)
    assert result.rc == 0, result.stderr
    out = json.loads(result.stdout)
    return out


@pytest.fixture
def populated(workspace):
    """A SQLite registry with two apps (one encrypted), patches on two channels, a revoke, a
    rollout, a conditional patch, a token, throttling rules and a guard."""
    ws = workspace
    src = Registry(ws, "--data", ws.data)
    src.ok("apps", "create", "demo")
    src.ok("apps", "create", "vault", "--encrypt")
    for i in range(3):
        src.ok("publish", "--app", "demo", "--app-version", "2.3", ws.write_file(f"fix({i});"))
    src.ok("publish", "--app", "demo", "--app-version", "2.3", "--channel", "beta", "--new-channel", ws.write_file("beta();"))
    src.ok("publish", "--app", "demo", "--app-version", "2.4", "--devices", "phone-1,phone-2", "--min-os", "15.0", ws.write_file("only();"))
    src.ok("publish", "--app", "vault", "--app-version", "1.0", ws.write_file("secret(\"é\\u0000\");"))
    src.ok("revoke", "--app", "demo", "--app-version", "2.3", "--patch", "2", "--message", "crashes")
    src.ok("rollout", "--app", "demo", "--app-version", "2.3", "--patch", "3", "--percent", "40")
    src.ok("tokens", "create", "--app", "demo", "--name", "ci")
    src.ok("apps", "throttle", "demo", "--min-interval", "120")
    src.ok("apps", "guard", "demo", "--max-rollback-rate", "5%", "--min-devices", "20")
    root = ws.root / "demo.root.json"
    root.write_text(src.ok("apps", "root", "demo"))
    return ws, src, root


def test_sqlite_to_postgres_and_back_keeps_every_row(populated):
    ws, src, root = populated
    events, head = src.head()
    tree, exported = src.exported("demo", ws.root / "export-sqlite")
    verified = verify(ws, tree, root)
    listing = src.json("list")

    url = new_database()
    copied = json.loads(run_patchctl(ws.exe, "db", "copy", "--from", ws.data, "--to", url, "--keys", ws.keys, "--json").stdout)
    assert copied["audit"] == {"events": events, "head": head, "sameOnTarget": True}
    assert copied["rows"]["patches"] == 6 and copied["rows"]["audit"] == events and copied["rows"]["tokens"] == 1
    assert "secret" not in copied["to"] or "***" in copied["to"]

    pg = Registry(ws, "--database", url)
    assert pg.head() == (events, head)
    assert pg.json("list") == listing
    pg_tree, pg_exported = pg.exported("demo", ws.root / "export-pg")
    assert pg_exported == exported, "the copy serves the same signed bytes"
    assert verify(ws, pg_tree, root) == verified

    # The copy is a working registry: a change on it extends the same chain.
    pg.ok("publish", "--app", "demo", "--app-version", "2.3", ws.write_file("after();"))
    assert pg.head()[0] == events + 1

    # And back to a new data directory (a backup of the PostgreSQL registry).
    back = ws.root / "data-back"
    result = run_patchctl(ws.exe, "db", "copy", "--from", url, "--to", back, "--keys", ws.keys)
    assert result.rc == 0, result.stderr
    assert "audit chain: " in result.stdout and "on both" in result.stdout
    restored = Registry(ws, "--data", back)
    assert restored.head() == pg.head()
    assert restored.json("list") == pg.json("list")


def test_a_refused_copy_changes_nothing(populated):
    ws, src, _ = populated
    before = src.head()
    url = new_database()
    assert run_patchctl(ws.exe, "db", "copy", "--from", ws.data, "--to", url, "--keys", ws.keys).rc == 0
    # Into a registry that is no longer empty: refused, and the target keeps what it had.
    target = Registry(ws, "--database", url)
    target_before = target.head()
    assert_cli_error(run_patchctl(ws.exe, "db", "copy", "--from", ws.data, "--to", url, "--keys", ws.keys), 2, "not empty")
    assert target.head() == target_before
    # The same registry twice; a source that does not exist; a URL that is not PostgreSQL.
    assert_cli_error(run_patchctl(ws.exe, "db", "copy", "--from", ws.data, "--to", ws.data, "--keys", ws.keys), 2, "same registry")
    missing = ws.root / "no-such-data"
    fresh = ws.root / "fresh"
    assert_cli_error(run_patchctl(ws.exe, "db", "copy", "--from", missing, "--to", fresh, "--keys", ws.keys), 2, "no registry")
    assert not missing.exists() and not (fresh / "registry.sqlite").exists()
    assert_cli_error(run_patchctl(ws.exe, "db", "copy", "--from", ws.data, "--to", "mysql://x/y", "--keys", ws.keys), 64, "postgres://")
    assert_cli_error(run_patchctl(ws.exe, "db", "copy", "--to", fresh, "--keys", ws.keys), 64, "--from")
    # Into an existing, non-empty SQLite registry: refused, its files stay.
    other = ws.root / "other-data"
    Registry(ws, "--data", other).ok("apps", "create", "elsewhere")
    assert_cli_error(run_patchctl(ws.exe, "db", "copy", "--from", ws.data, "--to", other, "--keys", ws.keys), 2, "not empty")
    assert Registry(ws, "--data", other).json("apps", "list")[0]["app"] == "elsewhere"
    assert src.head() == before


def test_a_copy_killed_before_commit_leaves_the_target_empty(populated):
    ws, src, _ = populated
    url = new_database()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOTPATCH_")}
    env["HOTPATCH_CRASH_AT"] = "copy.before-commit"
    proc = subprocess.run([str(ws.exe), "db", "copy", "--from", str(ws.data), "--to", url, "--keys", str(ws.keys)],
                          capture_output=True, env=env, timeout=120)
    assert proc.returncode == -9, proc.stderr
    target = Registry(ws, "--database", url)
    assert target.json("apps", "list") == []
    assert target.json("audit", "--verify")["chain"]["events"] == 0
    # ...so the copy can simply be run again.
    assert run_patchctl(ws.exe, "db", "copy", "--from", ws.data, "--to", url, "--keys", ws.keys).rc == 0
    assert target.head() == src.head()
