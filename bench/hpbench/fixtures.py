"""What rows share within a phase: the bench registry, patchd and nginx on it, the PostgreSQL
cluster and its registry, and where simulated devices keep their caches.
"""
import json
import os
import tempfile
import types

from . import common
from .common import BIN, BUNDLE, Failed, REPO, etag, first_line, http, run, same_body, say
from .servers import start_nginx, start_patchd


# -- fixtures: the registry everything is served from, the servers of each phase ----------------------

def ctl(*args, data=None, keys=None, database=None, what="patchctl"):
    where = ["--database", database] if database else ["--data", data or common.CTX.path("registry")]
    return run([f"{BIN}/patchctl", *args, *where, "--keys", keys or common.CTX.path("keys")], f"patchctl {args[0]} {args[1] if len(args) > 1 else ''}")


def registry():
    def make():
        say(f"setting up the registry in {common.CTX.work}")
        big = common.CTX.path("big-main.js")             # the 200 KB target of row 4
        line = b"defineClass('Bench', { f: function(a, b) { return a + b + 42; } }); // padding\n"
        data = line * (204800 // len(line))      # whole statements (publish checks the script),
        data += b"/" * (204800 - len(data) - 1) + b"\n"   # then a comment to 204800 B
        with open(big, "wb") as f:
            f.write(data)
        # demo: min-interval 0 (the same device may check again at once: 304s, client syncs);
        # fleet: min-interval 3600 (every new device is tracked); big: the 200 KB bundle. No IP limit.
        for app in ("demo", "fleet", "big"):
            ctl("apps", "create", app)
        ctl("apps", "throttle", "demo", "--min-interval", "0", "--ip-rate", "off")
        ctl("apps", "throttle", "fleet", "--min-interval", "3600", "--ip-rate", "off")
        ctl("apps", "throttle", "big", "--min-interval", "0", "--ip-rate", "off")
        pub = {app: json.loads(ctl("publish", "--app", app, "--app-version", "2.3", BUNDLE if app != "big" else big, "--json"))
               for app in ("demo", "fleet", "big")}
        with open(common.CTX.path("demo.root.json"), "w") as f:
            f.write(ctl("apps", "root", "demo"))
        # kill (row 10): the default one-hour interval, three patches of 2.3; row 10b revokes
        # patch 3, then row 10 patch 2.
        ctl("apps", "create", "kill")
        ctl("apps", "throttle", "kill", "--ip-rate", "off")
        ctl("publish", "--app", "kill", "--app-version", "2.3", BUNDLE)
        ctl("publish", "--app", "kill", "--app-version", "2.3", big)
        with open(common.CTX.path("kill3.js"), "w") as f:
            f.write('defineClass("Kill", {});\n')
        ctl("publish", "--app", "kill", "--app-version", "2.3", common.CTX.path("kill3.js"))
        # Row 10's second fleet (caches on disk) revokes 2.4 patch 2.
        ctl("publish", "--app", "kill", "--app-version", "2.4", BUNDLE)
        ctl("publish", "--app", "kill", "--app-version", "2.4", big)
        with open(common.CTX.path("kill.root.json"), "w") as f:
            f.write(ctl("apps", "root", "kill"))
        token = json.loads(ctl("tokens", "create", "--app", "kill", "--name", "bench-kill", "--json"))["token"]
        with open(common.CTX.path("kill.token"), "w") as f:
            f.write(token + "\n")
        os.chmod(common.CTX.path("kill.token"), 0o600)
        # The server layout: SITE/v1/apps/APP/{metadata,targets}, the URLs patchd serves.
        for app in ("demo", "fleet", "big"):
            ctl("export", "--app", app, "--out", common.CTX.path("site"))
        run(["chmod", "-R", "a+rX", common.CTX.path("site")])
        target = lambda p: f"targets/2.3/{p['patch']}/{p['served']['sha256']}.main.js"
        return types.SimpleNamespace(reg=common.CTX.path("registry"), keys=common.CTX.path("keys"), site=common.CTX.path("site"),
                                     bundle_target=target(pub["fleet"]), big_target=target(pub["big"]),
                                     demo_target_path=pub["demo"]["targetPath"])
    return common.CTX.once("registry", make)


def main_servers(own_core=False):
    """patchd and nginx on the bench registry, both answering the same bytes (rows 1-4, 7).
    own_core (row 19): a second pair, patchd with one event loop and nginx with one worker,
    both on CPU 0, so that wrk (WRK_OWN_CORE) has CPU 1 to itself."""
    def make():
        g = registry()
        if own_core:
            if (os.cpu_count() or 1) < 2:
                raise Failed("row 19 needs 2 CPUs: the servers on one, wrk on the other")
            hp = start_patchd("own-core", g.reg, g.keys, "--threads", "1", cpu=0)
            ng = start_nginx(g.site, "nginx-own-core", workers=1, cpu=0)
        else:
            hp = start_patchd("main", g.reg, g.keys)
            ng = start_nginx(g.site)
        say(f"patchd on {hp.url} (pid {hp.pid}), nginx on {ng.url} (pid {ng.pid}){', both on CPU 0' if own_core else ''}")
        P, N = hp.url, ng.url
        same_body(f"{P}/v1/apps/demo/metadata/timestamp.json", f"{N}/v1/apps/demo/metadata/timestamp.json")
        same_body(f"{P}/v1/apps/big/{g.big_target}", f"{N}/v1/apps/big/{g.big_target}")
        same_body(f"{P}/v1/apps/demo/versions/2.3/patch", f"{N}/v1/apps/fleet/{g.bundle_target}", {"X-Device-ID": "bench-probe"})
        hp_etag = etag(f"{P}/v1/apps/demo/versions/2.3/patch", {"X-Device-ID": "bench-304"})
        ng_etag = etag(f"{N}/v1/apps/fleet/{g.bundle_target}", method="HEAD")
        if http(f"{P}/v1/apps/demo/versions/2.3/patch", {"X-Device-ID": "bench-304", "If-None-Match": hp_etag})[0] != 304:
            raise Failed(f"patchd does not answer 304 to If-None-Match {hp_etag}")
        if http(f"{N}/v1/apps/fleet/{g.bundle_target}", {"If-None-Match": ng_etag})[0] != 304:
            raise Failed(f"nginx does not answer 304 to If-None-Match {ng_etag}")
        return types.SimpleNamespace(P=P, N=N, hp_etag=hp_etag, ng_etag=ng_etag)
    return common.CTX.once("servers:own-core" if own_core else "servers:main", make)


def pg():
    """A PostgreSQL cluster of our own (the one `make test` uses, scripts/pg-test-cluster.sh:
    Unix socket only, default durability), removed at the end. Each registry lives in its own
    schema of its one database."""
    def make():
        say("rows 14-16: starting a PostgreSQL cluster (scripts/pg-test-cluster.sh start)")
        common.CTX.pg_dir = run(["bash", f"{REPO}/scripts/pg-test-cluster.sh", "start"], "scripts/pg-test-cluster.sh start").strip()
        url = run(["bash", "-c", f'eval "$(bash {REPO}/scripts/pg-test-cluster.sh env {common.CTX.pg_dir})"; echo "$HOTPATCH_TEST_DATABASE"']).strip()
        pg_bin = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")
        run([f"{pg_bin}/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", "CREATE SCHEMA serve; CREATE SCHEMA publish"], "creating the schemas")
        say(f"  PostgreSQL in {common.CTX.pg_dir}")
        return types.SimpleNamespace(url=url, schema=lambda s: f"{url}&options=-csearch_path%3D{s}",
                                     version=first_line([f"{pg_bin}/postgres", "--version"]))
    return common.CTX.once("pg", make)


def pg_registry():
    """The registry rows 15-16 serve: apps demo and fleet as in the SQLite registry, the same
    bundle, its own keys (so metadata bytes differ from SQLite's, sizes do not)."""
    def make():
        url, keys, site = pg().schema("serve"), common.CTX.path("pg-keys"), common.CTX.path("pg-site")
        for app in ("demo", "fleet"):
            ctl("apps", "create", app, database=url, keys=keys)
        ctl("apps", "throttle", "demo", "--min-interval", "0", "--ip-rate", "off", database=url, keys=keys)
        ctl("apps", "throttle", "fleet", "--min-interval", "3600", "--ip-rate", "off", database=url, keys=keys)
        ctl("publish", "--app", "demo", "--app-version", "2.3", BUNDLE, "--json", database=url, keys=keys)
        fleet = json.loads(ctl("publish", "--app", "fleet", "--app-version", "2.3", BUNDLE, "--json", database=url, keys=keys))
        for app in ("demo", "fleet"):
            ctl("export", "--app", app, "--out", site, database=url, keys=keys)
        run(["chmod", "-R", "a+rX", site])
        return types.SimpleNamespace(url=url, keys=keys, site=site,
                                     bundle_target=f"targets/2.3/{fleet['patch']}/{fleet['served']['sha256']}.main.js")
    return common.CTX.once("pg-registry", make)


def client_tmp():
    """Where simulated devices keep their caches: tmpfs when the machine has /dev/shm (rows 7
    and 10). PatchClient fsyncs what it installs and removes (crash safety); on one disk the
    fsyncs of 1,000 devices queue in its journal, where every phone has its own flash."""
    def make():
        if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
            return tempfile.mkdtemp(prefix="hotpatch-bench.", dir="/dev/shm")
        return common.CTX.work
    common.CTX.client_tmp = common.CTX.once("client-tmp", make)
    return common.CTX.client_tmp
