"""Starting the servers a row measures: patchd, nginx, haproxy (deploy/haproxy.cfg) and the
reference server (bench/refserver.c); reading patchd's RSS and tracked devices.
"""
import os
import queue
import socket
import subprocess
import threading
import time
import types
from urllib.parse import urlsplit

from . import common
from .common import BIN, Failed, REPO, body, free_port, http, pinned, run, stop


class Server(types.SimpleNamespace):
    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"


def start_patchd(label, data, keys, *extra, cpu=None):
    """patchd on a free port; started_ms is spawn to its "patchd listening on" line. DATA is
    a data directory (SQLite) or a postgres:// URL (--database)."""
    where = ["--database", data] if data.startswith(("postgres://", "postgresql://")) else ["--data", data]
    port = free_port()
    err = open(common.CTX.path(f"{label}.err"), "ab")
    t0 = time.perf_counter()
    p = common.CTX.spawn([*pinned(cpu), f"{BIN}/patchd", *where, "--keys", keys, "--listen", f"127.0.0.1:{port}", *extra],
                         stdout=subprocess.PIPE, stderr=err)
    lines = queue.Queue()

    def drain():                                 # reads patchd's stdout to its end
        listening = False
        for line in p.stdout:
            if not listening and line.startswith(b"patchd listening on "):
                listening = True
                lines.put(time.perf_counter())
        lines.put(None)
    threading.Thread(target=drain, daemon=True).start()
    try:
        t1 = lines.get(timeout=120)
    except queue.Empty:
        t1 = None
    if t1 is None:
        stop(p)
        with open(common.CTX.path(f"{label}.err")) as f:
            raise Failed(f"patchd ({label}) did not start: {f.read()[-2000:]}")
    return Server(proc=p, pid=p.pid, port=port, started_ms=round((t1 - t0) * 1000, 1))


def start_nginx(site, name="nginx", workers=2, cpu=None):
    """Configured like a tuned static server: 2 workers (one per core, as patchd's 2 threads),
    no access log, sendfile, keep-alive connections never closed for a request count; /healthz
    answers 200 as patchd's does, for haproxy's checks (row 16). Row 19: 1 worker on `cpu`."""
    d = common.CTX.path(name)
    os.makedirs(f"{d}/tmp", exist_ok=True)
    port = free_port()
    user = ""
    if os.getuid() == 0:
        import grp
        import pwd
        user = f"user {pwd.getpwuid(0).pw_name} {grp.getgrgid(0).gr_name};"
    conf = f"""worker_processes {workers};
{user}
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
    client_body_temp_path {d}/tmp/client;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {site};
        location = /healthz {{ return 200; }}
    }}
}}
"""
    with open(f"{d}/nginx.conf", "w") as f:
        f.write(conf)
    base = ["nginx", "-p", f"{d}/", "-c", f"{d}/nginx.conf", "-e", f"{d}/error.log"]
    run(base[:1] + ["-q", "-t"] + base[1:], f"nginx -t ({d}/nginx.conf)")
    p = common.CTX.spawn(pinned(cpu) + base + ["-g", "daemon off;"])
    s = Server(proc=p, pid=p.pid, port=port)
    for _ in range(100):
        try:
            http(s.url + "/")
            return s
        except OSError:
            if p.poll() is not None:
                break
            time.sleep(0.05)
    raise Failed(f"nginx did not start: {open(f'{d}/error.log').read()[-2000:]}")


# wrk is a load test from one address (127.0.0.1, thousands of requests a second): the
# config's per-source limits (600 requests per 10 s, ...) would answer most of it 429, so
# this haproxy runs with them raised out of the way. The shipped defaults stay protective.
HAPROXY_BENCH_LIMITS = {"HOTPATCH_HAPROXY_CONN_PER_SRC": "100000000", "HOTPATCH_HAPROXY_CONN_RATE_PER_SRC": "100000000",
                        "HOTPATCH_HAPROXY_REQ_RATE_PER_SRC": "100000000"}


def start_haproxy(name, server1, server2):
    """deploy/haproxy.cfg as shipped (its addresses come from the environment) in front of two
    HOST:PORT. Returns once /healthz answered 200 through it four times in a row: without
    X-Device-ID haproxy round-robins, so both servers answered."""
    port = free_port()
    env = {**os.environ, **HAPROXY_BENCH_LIMITS, "HOTPATCH_PROXY_LISTEN": f"127.0.0.1:{port}", "PATCHD1": server1, "PATCHD2": server2}
    cfg = f"{REPO}/deploy/haproxy.cfg"
    check = subprocess.run(["haproxy", "-c", "-q", "-f", cfg], env=env, capture_output=True, text=True)
    if check.returncode:
        raise Failed(f"haproxy rejected deploy/haproxy.cfg: {check.stdout}{check.stderr}")
    log = open(common.CTX.path(f"haproxy-{name}.log"), "ab")
    p = common.CTX.spawn(["haproxy", "-db", "-f", cfg], env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    s = Server(proc=p, pid=p.pid, port=port)
    up = 0
    for _ in range(100):
        try:
            up = up + 1 if http(s.url + "/healthz")[0] == 200 else 0
        except OSError:
            up = 0
        if up >= 4:
            return s
        if p.poll() is not None:
            break
        time.sleep(0.05)
    raise Failed(f"haproxy ({name}) did not come up")


def rss_mb(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        kb = int(next(l for l in f if l.startswith(field + ":")).split()[1])
    return float(f"{kb / 1024:.1f}")


def tracked_devices(port):
    try:
        for line in body(f"http://127.0.0.1:{port}/metrics").decode().splitlines():
            w = line.split()
            if len(w) >= 2 and w[0] == "hotpatch_tracked_devices":
                return int(float(w[1]))
    except (OSError, Failed):
        pass
    return None


REFSERVER = os.path.join(REPO, ".build", "refserver")


def raw_response(url, headers):
    """patchd's whole answer (head and body, as sent) to one GET of URL: what the reference
    server repeats. Read to the end of its Content-Length."""
    u = urlsplit(url)
    with socket.create_connection((u.hostname, u.port), timeout=30) as sock:
        lines = [f"GET {u.path} HTTP/1.1", f"Host: {u.hostname}:{u.port}"] + [f"{k}: {v}" for k, v in headers.items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                raise Failed(f"patchd closed the connection before answering {url}")
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next((int(l.split(b":", 1)[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")), 0)
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return head + b"\r\n\r\n" + rest[:length]


def start_refserver(label, response):
    """bench/refserver.c on a free port, answering every request with RESPONSE, as many
    threads as patchd has I/O threads (its default: one per core, at least 2)."""
    if not os.path.exists(REFSERVER):
        raise Failed(f"{REFSERVER} is missing (make bench builds it from bench/refserver.c)")
    path = common.CTX.path(f"ref-{label}.http")
    with open(path, "wb") as f:
        f.write(response)
    p = common.CTX.spawn([REFSERVER, path, str(max(2, os.cpu_count() or 2))], stdout=subprocess.PIPE)
    line = p.stdout.readline().decode()
    if not line.startswith("listening on "):
        stop(p)
        raise Failed(f"refserver ({label}) did not start: {line!r}")
    port = int(line.split()[-1])
    return Server(proc=p, pid=p.pid, port=port, url=f"http://127.0.0.1:{port}")
