"""What a flood of unauthenticated device reports costs patchd: the check path and the
publishes beside it.

    PATCHCTL=.build/release/patchctl PATCHD=.build/release/patchd python bench/reports_flood.py [SECONDS] [PROCESSES]

Starts a patchd on a fresh registry, then measures for SECONDS each: the check path alone
(`timestamp.json` from a new device per request, paced at 500 a second, one connection, in a
process of its own), publishes over HTTP alone (latency), reports alone (requests/s, 100 events
each from a new device per request, PROCESSES senders), the check path during that flood, and
publishes during it. Prints one JSON object.

The machine is split so the load generator cannot take the server's CPU (a real attacker's
CPU is elsewhere): patchd runs on CPU 0 (every thread pinned), the senders, the checker and
the publisher on CPU 1, the senders under SCHED_IDLE (`background`) so the checker and the
publisher are never queued behind them there; their bodies are built before the clock starts.
The flood rate they reach is reported beside the figures. (At nice 19 the checker still
waited for a sender's scheduler slice now and then: perf sched on CPU 1 showed its wake-ups
delayed p99 0.25-0.5 ms during the flood against 0.05 ms without it, a tail of the load
generator's own, not of patchd.)

The flood is the worst a forger can send that still counts: every event carries a valid
receipt (computed from the registry's secret, bench/receipts.py), every device reports from
a /16 of its own (127.0.0.1 is a trusted proxy and X-Forwarded-For names the device's
address), and patchd's report budgets are lifted, so every event is a durable write. The
per-IP bucket is off for the app.
"""
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "interop"))
from hotpatch_testing import Workspace  # noqa: E402
from patchd_support import Patchd, connection  # noqa: E402
from receipts import address, receipt, secret  # noqa: E402

# Every limit of ReportRules out of the way: the flood's events all count.
UNLIMITED = ["--trusted-proxy", "127.0.0.1", "--max-new-conns-per-ip", "0", "--report-queue", "200000"] + [
    arg for flag in ("--report-devices-per-network", "--report-devices-per-block", "--report-devices-per-app",
                     "--report-events-per-network", "--report-events-per-app") for arg in (flag, "100000000")]
CHECKS_PER_SECOND = 500


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else None


def ms(values):
    return {"p50": round(statistics.median(values) * 1000, 2), "p99": round(percentile(values, 0.99) * 1000, 2), "n": len(values)}


def bodies(key, index, count):
    """`count` reports of 100 events, each from a new device with its receipt and address."""
    out = []
    for n in range(count):
        device = f"flood-{index}-{n}"
        r = receipt(key, device)
        body = json.dumps({"events": [{"id": str(uuid.uuid4()), "type": "installed" if i % 2 else "confirmed",
                                       "appVersion": "2.3", "patch": 1, "receipt": r} for i in range(100)]}).encode()
        out.append((device, address(index * 100_000 + n), body))
    return out


def background():
    """This process runs only when nothing else of the load generator's CPU wants to:
    SCHED_IDLE, which a woken checker preempts at once (nice 19 where it is refused)."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)


def flood(url, prepared, start, stop, sent):
    background()
    conn = connection(url)
    start.wait()
    n = 0
    while not stop.is_set() and n < len(prepared):
        device, where, body = prepared[n]
        conn.request("POST", "/v1/apps/demo/reports", body=body,
                     headers={"X-Device-ID": device, "Content-Type": "application/json", "X-Forwarded-For": where})
        resp = conn.getresponse()
        resp.read()
        if resp.status == 202:
            n += 1
        elif resp.status == 503:
            time.sleep(0.01)  # the queue is full: what a device does, sooner
    sent.value = n
    conn.close()


def checks(url, seconds, tag, out):
    """timestamp.json from a new device per request, paced, one connection: latencies."""
    latencies = []
    conn = connection(url, timeout=60)
    started = time.monotonic()
    i = 0
    while time.monotonic() - started < seconds:
        due = started + i / CHECKS_PER_SECOND
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        i += 1
        begun = time.perf_counter()
        conn.request("GET", "/v1/apps/demo/metadata/timestamp.json", headers={"X-Device-ID": f"check-{tag}-{i}"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200, resp.status
        latencies.append(time.perf_counter() - begun)
    conn.close()
    out.put(latencies)


def measure_checks(url, seconds, tag):
    out = multiprocessing.Queue()
    proc = multiprocessing.Process(target=checks, args=(url, seconds, tag, out))
    proc.start()
    latencies = out.get()
    proc.join()
    return latencies


def publishes(server, token, seconds):
    latencies = []
    deadline = time.monotonic() + seconds
    conn = connection(server.url, timeout=60)
    i = 0
    while time.monotonic() < deadline:
        i += 1
        started = time.monotonic()
        conn.request("POST", "/v1/apps/demo/patches?appVersion=2.4&rollout=10", body=f"fix({uuid.uuid4()})".encode(),
                     headers={"Authorization": f"Bearer {token[i % len(token)]}"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 201, resp.status
        latencies.append(time.monotonic() - started)
        time.sleep(0.2)
    conn.close()
    return latencies


def metrics(server):
    conn = connection(server.url)
    try:
        conn.request("GET", "/metrics")
        return [line for line in conn.getresponse().read().decode().splitlines() if line.startswith("hotpatch_report")]
    finally:
        conn.close()


def pin(pid, cpu):
    """Every thread of process `pid` onto `cpu` (threads started later inherit it)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(task), {cpu})


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10
    processes = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        ws.create_app("demo")
        ws.ok("apps", "throttle", "demo", "--ip-rate", "off")
        ws.publish("demo", "2.3", "fix(1)")
        # Changes are limited per token (30/min): enough tokens to publish 5 times a second.
        token = [ws.token("--app", "demo", "--role", "publisher", "--name", f"bench-{i}") for i in range(12)]
        server = Patchd(ws, args=UNLIMITED)
        split = os.cpu_count() >= 2
        if split:
            pin(server.proc.pid, 0)
            os.sched_setaffinity(0, {1})  # this process and every child it starts
        try:
            key = secret(str(ws.sqlite))
            # Enough bodies for the fastest flood seen (about 250 reports/s) for the three phases.
            per_process = int(seconds * 3 * 300 / processes) + 100
            prepared = [bodies(key, i, per_process) for i in range(processes)]
            checks_alone = measure_checks(server.url, seconds, "alone")
            alone = publishes(server, token, seconds)

            def run_flood(beside):
                start, stop = multiprocessing.Event(), multiprocessing.Event()
                sent = [multiprocessing.Value("i", 0) for _ in range(processes)]
                workers = [multiprocessing.Process(target=flood, args=(server.url, prepared[i], start, stop, sent[i])) for i in range(processes)]
                for w in workers:
                    w.start()
                time.sleep(0.5)  # connected, waiting
                began = time.monotonic()
                start.set()
                result = beside() if beside else (time.sleep(seconds) or [])
                stop.set()
                for w in workers:
                    w.join()
                for i in range(processes):  # a phase never reuses a device (each report a new one)
                    prepared[i] = prepared[i][sent[i].value:]
                return sum(s.value for s in sent) / (time.monotonic() - began), result

            flood_rate, _ = run_flood(None)
            checked_rate, checks_flooded = run_flood(lambda: measure_checks(server.url, seconds, "flood"))
            busy_rate, beside = run_flood(lambda: publishes(server, token, seconds))
            server_metrics = metrics(server)
            size = sum(f.stat().st_size for f in ws.data.iterdir())
            print(json.dumps({
                "processes": processes, "seconds": seconds, "checks_per_s": CHECKS_PER_SECOND, "cpus_split": split,
                "reports_per_s_alone": round(flood_rate, 1), "events_per_s_alone": round(flood_rate * 100),
                "reports_per_s_with_checks": round(checked_rate, 1), "reports_per_s_with_publishes": round(busy_rate, 1),
                "publish_ms_alone": ms(alone), "publish_ms_under_flood": ms(beside),
                "check_ms_alone": ms(checks_alone), "check_ms_under_flood": ms(checks_flooded),
                "metrics": server_metrics, "registry_bytes": size,
            }, indent=1))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
