"""What the interop tests share: the patchctl/patchd binaries, running patchctl, a registry
workspace, python-tuf clients and the hotpatch bundle encryption.

Binaries: $PATCHCTL / $PATCHD, or <repo>/.build/debug/patchctl / patchd.
Fixtures live in conftest.py; patchd processes and raw HTTP in patchd_support.py.

The registry backend: SQLite under each workspace's data directory, or, with
HOTPATCH_TEST_REGISTRY=postgres and HOTPATCH_TEST_DATABASE naming a PostgreSQL database
(`make test-interop` runs the suite both ways), one schema of that database per workspace.
"""

import errno
import hashlib
import itertools
import json
import os
import re
import shutil
import sqlite3
import subprocess
import time
import uuid
from collections import namedtuple
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from tuf.ngclient import Updater

REPO_ROOT = Path(__file__).resolve().parents[2]

Result = namedtuple("Result", "rc stdout stderr")


# -- binaries and processes ------------------------------------------------------------------

def binary(env_name, name) -> Path:
    """$ENV_NAME, or <repo>/.build/debug/NAME; raises FileNotFoundError if it is not an executable."""
    path = Path(os.environ.get(env_name) or REPO_ROOT / ".build" / "debug" / name)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise FileNotFoundError(f"{name} not found at {path}: run `swift build` or set {env_name}")
    return path


def clean_env():
    """os.environ without HOTPATCH_*, so only explicit options count."""
    return {k: v for k, v in os.environ.items() if not k.startswith("HOTPATCH_")}


def spawn(fn):
    """fn(), retried on ETXTBSY (a concurrent `swift build` relinking the binary)."""
    for attempt in range(50):
        try:
            return fn()
        except OSError as error:
            if error.errno != errno.ETXTBSY or attempt == 49:
                raise
            time.sleep(0.2)


def run_patchctl(exe, *args, stdin=None, cwd=None, timeout=120, env=None) -> Result:
    """Runs patchctl with `args` in a clean environment (plus `env`, e.g. HOTPATCH_APNS_URL);
    returns Result(rc, stdout, stderr) as text."""
    argv = [str(exe), *[str(a) for a in args]]
    proc = spawn(lambda: subprocess.run(argv, input=stdin, capture_output=True, cwd=cwd,
                                        env={**clean_env(), **(env or {})}, timeout=timeout))
    return Result(proc.returncode, proc.stdout.decode("utf-8", "replace"),
                  proc.stderr.decode("utf-8", "replace"))


def assert_cli_error(result: Result, rc: int, *needles: str):
    """Exit code `rc`, and stderr is a clear patchctl message: its first line starts with
    "patchctl:" and mentions every needle (case-insensitive); any further line (the usage
    hint) is also prefixed; no crash output."""
    assert result.rc == rc, f"expected exit {rc}, got {result.rc}\nstderr: {result.stderr}"
    lines = result.stderr.strip("\n").split("\n")
    assert lines and lines[0].startswith("patchctl: "), f"stderr: {result.stderr!r}"
    assert len(lines[0]) > len("patchctl: ") + 5
    for line in lines:
        assert line.startswith("patchctl:"), f"unprefixed stderr line {line!r}"
    for needle in needles:
        assert needle.lower() in lines[0].lower(), f"{needle!r} not in {lines[0]!r}"
    assert "Fatal error" not in result.stderr and "Traceback" not in result.stderr


# -- the registry backend --------------------------------------------------------------------

# Read once: every workspace of a run uses the same backend.
ON_POSTGRES = os.environ.get("HOTPATCH_TEST_REGISTRY") == "postgres"
TEST_DATABASE = os.environ.get("HOTPATCH_TEST_DATABASE")
PSQL = shutil.which("psql") or "/usr/lib/postgresql/15/bin/psql"
PG_DUMP = shutil.which("pg_dump") or "/usr/lib/postgresql/15/bin/pg_dump"


def sqlite_only(why):
    """Skips a test in the PostgreSQL pass: it is about the SQLite file itself (`why`)."""
    return pytest.mark.skipif(ON_POSTGRES, reason=f"about the SQLite file: {why}")


def postgres_only(test):
    """Runs a test only in the PostgreSQL pass (the twin of a sqlite_only test)."""
    return pytest.mark.skipif(not ON_POSTGRES, reason="the PostgreSQL twin of a SQLite-file test")(test)


class PostgresSQLError(Exception):
    """psql's error message for a statement the server refused."""


def psql(url, sql) -> str:
    """SQL run by psql on `url`; its unaligned, tuples-only output (fields split by \x1f).
    Raises PostgresSQLError (psql's stderr) when the server refuses it."""
    proc = subprocess.run([PSQL, url, "-X", "-A", "-t", "-F", "\x1f", "-v", "ON_ERROR_STOP=1", "-c", sql],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise PostgresSQLError(proc.stderr.strip())
    return proc.stdout


def new_postgres_registry() -> tuple:
    """(schema, URL): a new, empty schema in $HOTPATCH_TEST_DATABASE and the URL of a registry
    in it (search_path set by the connection's options, as docs/POSTGRES.md says)."""
    if not TEST_DATABASE:
        raise RuntimeError("HOTPATCH_TEST_REGISTRY=postgres needs HOTPATCH_TEST_DATABASE: "
                           "run under scripts/pg-test-cluster.sh run (make test-interop does)")
    schema = f"ws_{uuid.uuid4().hex[:16]}"
    psql(TEST_DATABASE, f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in TEST_DATABASE else "?"
    return schema, f"{TEST_DATABASE}{separator}options=-csearch_path%3D{schema}"


def _sql_literal(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"'\\x{bytes(value).hex()}'::bytea"
    return "'" + str(value).replace("'", "''") + "'"


class _PostgresCursor:
    def __init__(self, rows, rowcount):
        self._rows, self.rowcount = rows, rowcount

    def fetchone(self):
        return self._rows[0] if self._rows else None

    def fetchall(self):
        return list(self._rows)


class PostgresSQL:
    """Just enough of sqlite3.Connection (execute with `?` parameters, rowcount, fetchone,
    commit) over psql, so a test that edits the registry behind patchctl's back (tampering)
    does the same on PostgreSQL. Each execute is its own transaction; bytea comes back as bytes."""

    _TAG = re.compile(r"^(?:UPDATE|DELETE|INSERT \d+) (\d+)$")

    def __init__(self, url):
        self.url = url

    def execute(self, sql, params=()):
        parts = sql.split("?")
        assert len(parts) == len(params) + 1, "one parameter per ?"
        text = parts[0] + "".join(_sql_literal(p) + rest for p, rest in zip(params, parts[1:]))
        lines = psql(self.url, text).splitlines()
        if lines and self._TAG.match(lines[-1]):
            return _PostgresCursor([], int(self._TAG.match(lines[-1]).group(1)))
        rows = [tuple(self._value(v) for v in line.split("\x1f")) for line in lines]
        return _PostgresCursor(rows, len(rows))

    @staticmethod
    def _value(text):
        if text.startswith("\\x"):
            return bytes.fromhex(text[2:])
        return int(text) if re.fullmatch(r"-?\d+", text) else text

    def commit(self):
        pass  # every execute committed already

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# What Workspace.sql() raises when the database refuses a statement, on either backend.
SQL_ERRORS = (sqlite3.DatabaseError, PostgresSQLError)


# -- a registry workspace --------------------------------------------------------------------

class Workspace:
    """A registry, a key directory (--keys) and input files under `root`, driven with
    patchctl (`exe`, default $PATCHCTL or the local build). The registry is SQLite under
    root/data (--data), or in the PostgreSQL pass a schema of its own (--database URL)."""

    def __init__(self, root: Path, exe: Path = None):
        self.root = root
        self.exe = Path(exe) if exe is not None else binary("PATCHCTL", "patchctl")
        self.data, self.keys, self.files = root / "data", root / "keys", root / "files"
        for d in (self.data, self.keys, self.files):
            # 0700 as patchctl makes them: an open data directory is warned about on stderr.
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._files = itertools.count(1)
        self._exports = itertools.count(1)
        self.schema, self.database = new_postgres_registry() if ON_POSTGRES else (None, None)

    @property
    def sqlite(self) -> Path:
        assert self.database is None, "a PostgreSQL workspace has no SQLite file: mark the test sqlite_only"
        return self.data / "registry.sqlite"

    # -- where the registry is -----------------------------------------------------------
    @property
    def registry_args(self) -> list:
        """What names this registry to patchctl and patchd: --database URL or --data DIR."""
        return ["--database", self.database] if self.database else ["--data", self.data]

    def registry_env(self) -> dict:
        """The same as environment variables (what `patchctl` typed in an app repository reads)."""
        where = {"HOTPATCH_DATABASE": self.database} if self.database else {"HOTPATCH_DATA": str(self.data)}
        return {**where, "HOTPATCH_KEYS": str(self.keys)}

    @property
    def registry_location(self) -> str:
        """How patchctl names this registry in its messages: the directory or the URL."""
        return self.database or str(self.data)

    def sql(self):
        """A connection to the registry's tables, behind patchctl's back: sqlite3 on the file,
        or PostgresSQL on the schema. Only for tests that tamper or look underneath."""
        return PostgresSQL(self.database) if self.database else sqlite3.connect(self.sqlite)

    def stored(self) -> bytes:
        """Everything the registry stores, as bytes: the SQLite file and its WAL, or a
        pg_dump of the workspace's schema (bytea is dumped as hex: see `stores`)."""
        if self.database:
            # A fixed \restrict key: pg_dump picks a random one per dump otherwise.
            proc = subprocess.run([PG_DUMP, TEST_DATABASE, f"--schema={self.schema}", "--no-owner", "--restrict-key=hotpatch"],
                                  capture_output=True, timeout=60, check=True)
            return proc.stdout
        # Not -shm: SQLite's shared-memory index of the WAL, which readers write to as well.
        return b"".join(p.read_bytes() for p in sorted(self.data.iterdir()) if p.name in ("registry.sqlite", "registry.sqlite-wal"))

    def stores(self, needle: bytes) -> bool:
        """Whether `needle` is anywhere in the registry: in a text column, or inside a blob
        (which pg_dump writes as hex)."""
        dump = self.stored()
        return needle in dump or (self.database is not None and needle.hex().encode() in dump)

    # -- running -------------------------------------------------------------------------
    def run(self, *args, registry=True, **kw) -> Result:
        """patchctl ARGS [--data DATA | --database URL] [--keys KEYS] in `root`; registry=False
        for commands that do not use the local registry (`verify`, `--server ...`)."""
        extra = [*self.registry_args, "--keys", self.keys] if registry else []
        return run_patchctl(self.exe, *args, *extra, cwd=self.root, **kw)

    def ok(self, *args, **kw) -> str:
        result = self.run(*args, **kw)
        assert result.rc == 0, f"patchctl {' '.join(map(str, args))} -> {result.rc}\n{result.stderr}"
        return result.stdout

    def json(self, *args, **kw):
        return json.loads(self.ok(*args, "--json", **kw))

    # -- common steps --------------------------------------------------------------------
    def create_app(self, name, encrypt=False):
        return self.json("apps", "create", *(["--encrypt"] if encrypt else []), name)

    def write_file(self, content, name=None) -> Path:
        """Writes `content` (str or bytes) to files/NAME (default: a new bundle-N.js)."""
        path = self.files / (name or f"bundle-{next(self._files)}.js")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    def publish(self, app, app_version, content, rollout=None, channel=None):
        """Local publish of `content` (str or bytes); returns (published JSON, plaintext bytes).
        A `channel` is declared with the publish (`--new-channel`, a no-op when it exists)."""
        data = content.encode() if isinstance(content, str) else content
        extra = ["--rollout", rollout] if rollout is not None else []
        extra += ["--channel", channel, "--new-channel"] if channel is not None else []
        return self.json("publish", "--app", app, "--app-version", app_version, *extra, self.write_file(data)), data

    def token(self, *args) -> str:
        """`tokens create ARGS`: the token (the last stdout line)."""
        return self.ok("tokens", "create", *args).strip().splitlines()[-1].strip()

    def root_json(self, app) -> bytes:
        """The bytes `patchctl apps root APP` prints (the 1.root.json an app embeds)."""
        return self.ok("apps", "root", app).encode()

    def root_file(self, app) -> Path:
        path = self.root / f"{app}.1.root.json"
        path.write_bytes(self.root_json(app))
        return path

    def export(self, app) -> Path:
        """Exports APP into a new directory and returns the directory holding its metadata/
        and targets/ (the export's DIR/v1/apps/APP, served as patchd serves /v1/apps/APP)."""
        out = self.new_export_dir(app)
        self.ok("export", "--app", app, "--out", out)
        return out / "v1" / "apps" / app

    def new_export_dir(self, app) -> Path:
        """A new directory to export APP into."""
        return self.root / f"export-{app}-{next(self._exports)}"

    def content_key(self, app) -> bytes:
        text = (self.keys / app / "content.key").read_text()
        assert text.endswith("\n") and len(text) == 65, "content.key is 64 hex chars + newline"
        return bytes.fromhex(text.strip())

    def role_key_pem(self, app, role) -> Path:
        """The (single, current) private key file of ROLE; fails if rotation left several."""
        files = sorted((self.keys / app).glob(f"{role}.*.pem"))
        assert len(files) == 1, f"expected one {role} key, found {files}"
        return files[0]

    def listing(self):
        """What an auditor sees locally: `list --json` (parsed)."""
        return self.json("list")

    def registry_state(self):
        """`list --json` and `audit --json` (parsed)."""
        return self.listing(), self.json("audit")


# -- python-tuf ------------------------------------------------------------------------------

_clients = itertools.count(1)


def make_updater(metadata_base_url, target_base_url, metadata_dir: Path, bootstrap):
    """A python-tuf Updater on the given base URLs (trailing slash included), downloading
    into a new directory next to metadata_dir. bootstrap=None reuses the trusted root already
    cached in metadata_dir (a client that ran before)."""
    metadata_dir.mkdir(parents=True, exist_ok=True)
    target_dir = metadata_dir.parent / f"downloads-{next(_clients)}"
    target_dir.mkdir()
    return Updater(metadata_dir=str(metadata_dir), metadata_base_url=metadata_base_url,
                   target_dir=str(target_dir), target_base_url=target_base_url, bootstrap=bootstrap)


def repo_updater(base_url, metadata_dir: Path, bootstrap):
    """make_updater on BASE/metadata/ and BASE/targets/: an exported repository, or patchd's
    /v1/apps/APP."""
    return make_updater(f"{base_url}/metadata/", f"{base_url}/targets/", metadata_dir, bootstrap)


def fetch(updater, path):
    """(TargetFile, downloaded bytes) for `path`, or (None, None) when it is not listed."""
    info = updater.get_targetinfo(path)
    if info is None:
        return None, None
    return info, Path(updater.download_target(info)).read_bytes()


def cached_version(metadata_dir: Path, role="root"):
    """The version of ROLE's metadata a client cached in metadata_dir."""
    return json.loads((metadata_dir / f"{role}.json").read_bytes())["signed"]["version"]


def digests(data: bytes):
    """The `plaintext` object of a target's custom metadata."""
    return {"length": len(data), "sha256": hashlib.sha256(data).hexdigest(), "md5": hashlib.md5(data).hexdigest()}


# -- bundle encryption -----------------------------------------------------------------------

def _aad(app, app_version, patch) -> bytes:
    return f"hotpatch/v1|{app}|{app_version}|{patch}".encode()


def encrypt(key: bytes, app, app_version, patch, plaintext: bytes, nonce: bytes = None) -> bytes:
    """nonce(12) || ciphertext || tag(16), AAD "hotpatch/v1|app|appVersion|patch"."""
    nonce = os.urandom(12) if nonce is None else nonce
    return nonce + AESGCM(key).encrypt(nonce, plaintext, _aad(app, app_version, patch))


def decrypt(key: bytes, app, app_version, patch, bundle: bytes) -> bytes:
    """The inverse of encrypt(); raises InvalidTag for another key, app, version or patch."""
    return AESGCM(key).decrypt(bundle[:12], bundle[12:], _aad(app, app_version, patch))
