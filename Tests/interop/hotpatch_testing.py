"""What the interop tests share: the patchctl/patchd binaries, running patchctl, a registry
workspace, python-tuf clients and the hotpatch bundle encryption.

Binaries: $PATCHCTL / $PATCHD, or <repo>/.build/debug/patchctl / patchd.
Fixtures live in conftest.py; patchd processes and raw HTTP in patchd_support.py.
"""

import errno
import hashlib
import itertools
import json
import os
import subprocess
import time
from collections import namedtuple
from pathlib import Path

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


# -- a registry workspace --------------------------------------------------------------------

class Workspace:
    """A registry (--data), a key directory (--keys) and input files under `root`, driven
    with patchctl (`exe`, default $PATCHCTL or the local build)."""

    def __init__(self, root: Path, exe: Path = None):
        self.root = root
        self.exe = Path(exe) if exe is not None else binary("PATCHCTL", "patchctl")
        self.data, self.keys, self.files = root / "data", root / "keys", root / "files"
        for d in (self.data, self.keys, self.files):
            # 0700 as patchctl makes them: an open data directory is warned about on stderr.
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._files = itertools.count(1)
        self._exports = itertools.count(1)

    @property
    def sqlite(self) -> Path:
        return self.data / "registry.sqlite"

    # -- running -------------------------------------------------------------------------
    def run(self, *args, registry=True, **kw) -> Result:
        """patchctl ARGS [--data DATA --keys KEYS] in `root`; registry=False for commands
        that do not use the local registry (`verify`, `--server ...`)."""
        extra = ["--data", self.data, "--keys", self.keys] if registry else []
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
        """Local publish of `content` (str or bytes); returns (published JSON, plaintext bytes)."""
        data = content.encode() if isinstance(content, str) else content
        extra = ["--rollout", rollout] if rollout is not None else []
        extra += ["--channel", channel] if channel is not None else []
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
