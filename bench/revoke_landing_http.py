"""Row 10b: how fast patchd lands a revoke for devices inside their interval, without the
simulated fleet's own TUF work (row 10 runs 1,000 real PatchClients on the same 2 cores).

    python bench/revoke_landing_http.py SERVER_URL APP VERSION PATCHCTL TOKEN_FILE PATCH [DEVICES] [THREADS]

Each device fetches timestamp.json once (X-Device-ID, X-App-Version: its interval starts),
then `patchctl revoke --server … --patch PATCH` runs, and the moment it exits every device
fetches timestamp.json again, THREADS at a time on kept-alive connections. A figure is from
just before patchctl starts to that device's 200 carrying a newer timestamp version (a 429
would mean the interval was not lifted). Prints one JSON object.
"""
import http.client
import json
import subprocess
import sys
import threading
import time
import urllib.parse


def main():
    server, app, version, patchctl, token, patch = sys.argv[1:7]
    devices = int(sys.argv[7]) if len(sys.argv) > 7 else 1000
    threads = int(sys.argv[8]) if len(sys.argv) > 8 else 64
    host = urllib.parse.urlsplit(server)
    path = f"/v1/apps/{app}/metadata/timestamp.json"

    def fetch(conn, device):
        conn.request("GET", path, headers={"X-Device-ID": device, "X-App-Version": version})
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, (json.loads(body)["signed"]["version"] if resp.status == 200 else None)

    def fleet(body):
        next_index = iter(range(devices))
        lock = threading.Lock()

        def worker():
            conn = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
            while True:
                with lock:
                    i = next(next_index, None)
                if i is None:
                    break
                body(conn, i)
            conn.close()

        workers = [threading.Thread(target=worker) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    before = {}
    fleet(lambda conn, i: before.__setitem__(i, fetch(conn, f"raw-{i}")))
    assert all(status == 200 for status, _ in before.values()), "every device's first check must be answered"
    old_version = max(v for _, v in before.values())
    started = time.monotonic()
    subprocess.run([patchctl, "revoke", "--server", server, "--token-file", token, "--app", app, "--app-version", version,
                    "--patch", patch], check=True, stdout=subprocess.DEVNULL)
    revoked = time.monotonic() - started
    times, missed = [], [0]
    lock = threading.Lock()

    def after(conn, i):
        status, seen = fetch(conn, f"raw-{i}")
        t = time.monotonic() - started
        with lock:
            if status == 200 and seen > old_version:
                times.append(t)
            else:
                missed[0] += 1

    fleet(after)
    times.sort()
    pick = lambda q: round(times[min(len(times) - 1, int(q * len(times)))] * 1e6) if times else 0  # noqa: E731
    print(json.dumps({"devices": devices, "threads": threads, "landed": len(times), "missed": missed[0],
                      "revoke_us": round(revoked * 1e6), "p50_us": pick(0.5), "p99_us": pick(0.99), "max_us": pick(1.0)}))


if __name__ == "__main__":
    main()
