"""Fair shares of the front door against patchd (issue 43, items 2 and 3), at the review's scale.
`budget`: COUNT anonymous heads of a device report declaring 64 KiB, from ADDRESSES addresses of
one /24, none sending its body (the review: 1,024 from 8 held the whole 64 MiB body budget for
60 s and publish, halt and approve got 503): patchd must hold at most the /24's share of the
anonymous pool and refuse the rest with 503 at once; meanwhile a publish, a halt and an approval
with TOKEN are answered by their handlers (201, 200, and 404 for an approval of a change that
does not exist: its body was read), the held heads are cut with 408 at
--anonymous-body-timeout (ANONYMOUS_TIMEOUT) and a report is then accepted (202).
`stalled`: COUNT connections, PER from each 127.0.x.y, alternately half a head and the head of a
device registration declaring 1,000 bytes never sent, and READERS GETs of TARGET_PATH (a bundle)
that never read, fill --max-conns (the review: 10,000 such bodies from 80 addresses, and newcomers
got 503 for 20 s); once STALL_TIMEOUT has passed, NEWCOMERS connections from other addresses,
each kept open, must each be served 200 within 2 s (patchd sheds a stalled one for each). The
patchd of this phase runs with its header and anonymous body deadlines held off, so only
shedding can free a slot.
Prints one JSON line (its "row" a line of the soak's table); exit 1 on a broken bound.
Usage: fair_share.py URL budget TOKEN COUNT ADDRESSES ANONYMOUS_TIMEOUT
       fair_share.py URL stalled COUNT PER READERS NEWCOMERS STALL_TIMEOUT TARGET_PATH"""
import json
import re
import resource
import select
import socket
import sys
import time
import urllib.parse
import uuid
from collections import Counter

from support import HEALTHZ, percentile

REPORT_SIZE = 64 << 10
NETWORK_SHARE = 8 << 20  # --network-body-share's default: a quarter of the anonymous pool (half of 64 MiB)
STATUS = re.compile(rb"HTTP/1\.[01] (\d{3})")


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < n:
        sys.exit(f"RLIMIT_NOFILE hard limit {hard} is below the {n} descriptors this phase needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, n), hard))


def connect(host, port, source, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((source, 0))
    s.settimeout(5)
    s.connect((host, port))
    return s


def exchange(host, port, source, data, timeout=5.0):
    """(status or error name, milliseconds) of DATA on a new connection from SOURCE."""
    t0 = time.monotonic()
    try:
        with connect(host, port, source) as s:
            s.sendall(data)
            s.settimeout(timeout)
            head = s.recv(4096)
            status = int(STATUS.match(head).group(1)) if STATUS.match(head) else "no answer"
    except OSError as e:
        status = type(e).__name__
    return status, round((time.monotonic() - t0) * 1000, 1)


def request(method, path, *fields, body=b"", length=None):
    """A request's bytes: its head (declaring LENGTH, or BODY's length) and BODY."""
    lines = [f"{method} {path} HTTP/1.1", "Host: x", *fields, f"Content-Length: {len(body) if length is None else length}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def first_status(socks, timeout):
    """{fd: status} of the sockets that got an answer within TIMEOUT (a 503 comes at once)."""
    poller, by_fd, got = select.poll(), {s.fileno(): s for s in socks}, {}
    for s in socks:
        poller.register(s.fileno(), select.POLLIN)
    deadline = time.monotonic() + timeout
    while len(got) < len(socks) and time.monotonic() < deadline:
        for fd, _ in poller.poll(100):
            try:
                data = by_fd[fd].recv(4096, socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            m = STATUS.match(data)
            got[fd] = int(m.group(1)) if m else "closed"
            poller.unregister(fd)
    return got


def budget(host, port, token, count, addresses, anonymous_timeout):
    raise_nofile(count + 256)
    head = request("POST", "/v1/apps/demo/reports", "X-Device-ID: crowd", length=REPORT_SIZE)
    socks, started = [], time.monotonic()
    for i in range(count):
        socks.append(connect(host, port, f"127.0.70.{1 + i % addresses}"))
        socks[-1].sendall(head)
    filled = time.monotonic() - started
    answered = first_status(socks, 3.0)  # a refusal comes at once; the held ones never answer
    held = [s for s in socks if s.fileno() not in answered]
    refused = Counter(answered.values())
    auth = f"Authorization: Bearer {token}"
    published = exchange(host, port, "127.0.70.1", request("POST", "/v1/apps/demo/patches?appVersion=9.99", auth, body=b"fixed();\n" * 1000))
    halted = exchange(host, port, "127.0.70.2", request("POST", "/v1/apps/demo/versions/9.99/patches/1/halt", auth))
    approval = json.dumps({"signatures": [{"keyid": "0" * 64, "sig": "00" * 64}]}).encode()
    approved = exchange(host, port, "127.0.70.3", request("POST", "/v1/apps/demo/pending/999999/approve", auth, "Content-Type: application/json", body=approval))
    cut = first_status(held, anonymous_timeout + 3)
    cut_at = time.monotonic() - started
    for s in socks:
        s.close()
    events = [{"id": str(uuid.uuid4()), "type": "launched", "appVersion": "2.3", "channel": "production", "patch": 1, "at": "2026-12-01T10:00:00Z"}]
    after = exchange(host, port, "127.0.71.1", request("POST", "/v1/apps/demo/reports", "X-Device-ID: soak-device", "Content-Type: application/json",
                                                       body=json.dumps({"events": events}).encode()))
    cuts = Counter(cut.values())
    ok = (len(held) * REPORT_SIZE <= NETWORK_SHARE and set(refused) <= {503} and published[0] == 201 and halted[0] == 200
          and approved[0] == 404 and cuts == Counter({408: len(held)}) and cut_at <= anonymous_timeout + filled + 3 and after[0] == 202)
    row = (f"| {count} anonymous heads declaring {REPORT_SIZE >> 10} KiB, {addresses} addresses of one /24, bodies never sent | "
           f"{len(held)} held ({len(held) * REPORT_SIZE >> 20} MiB), {refused.get(503, 0)} × 503 (heads sent in {filled:.2f} s); with a token "
           f"meanwhile publish {published[0]} ({published[1]:.0f} ms), halt {halted[0]} ({halted[1]:.0f} ms), approve {approved[0]} "
           f"({approved[1]:.0f} ms); held ones {dict(cuts)} by {cut_at:.1f} s; then a report {after[0]} | "
           f"≤ one /24's share ({NETWORK_SHARE >> 20} MiB) held; token bodies answered by their handlers; held cut at "
           f"--anonymous-body-timeout ({anonymous_timeout:g} s) | {'ok' if ok else 'FAIL'} |")
    return ok, {"mode": "budget", "heads": count, "addresses": addresses, "held": len(held), "refused": dict(refused),
                "fill_seconds": round(filled, 2), "publish": published, "halt": halted, "approve": approved,
                "held_cut": dict(cuts), "held_cut_by_s": round(cut_at, 1), "report_after": after[0], "row": row}


def stalled(host, port, count, per, readers, newcomers, stall_timeout, target):
    raise_nofile(count + readers + newcomers + 256)
    body_head = request("POST", "/v1/apps/demo/devices", "Content-Type: application/json", length=1000)
    # Heads and bodies in turn, the readers spread evenly among them.
    kinds = ["head" if k % 2 == 0 else "body" for k in range(count)]
    for r in range(readers):
        kinds.insert(min(len(kinds), (r + 1) * (count // readers + 1) - 1), "reader")
    made, socks, started = Counter(), [], time.monotonic()
    for kind in kinds:
        if kind == "reader":
            s = connect(host, port, f"127.0.{90 + made[kind] // 100}.{1 + made[kind] % 100}", rcvbuf=4096)
            s.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        else:
            k = made["head"] + made["body"]
            s = connect(host, port, f"127.0.{80 + k // per // 250}.{1 + (k // per) % 250}")
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" if kind == "head" else body_head)
        made[kind] += 1
        socks.append(s)
    filled = time.monotonic() - started
    time.sleep(stall_timeout + 0.5)
    results, kept = [], []
    for k in range(newcomers):
        t0 = time.monotonic()
        try:
            s = connect(host, port, f"127.0.95.{1 + k % 250}")
            kept.append(s)
            s.settimeout(2)
            s.sendall(HEALTHZ)
            data = s.recv(4096)
            m = STATUS.match(data)
            results.append((int(m.group(1)) if m else "no answer", time.monotonic() - t0))
        except OSError as e:
            results.append((type(e).__name__, time.monotonic() - t0))
        time.sleep(0.1)
    time.sleep(0.3)
    shed = Counter()
    for kind, s in zip(kinds, socks):
        s.setblocking(False)  # a timeout socket would wait out its timeout on MSG_DONTWAIT
        try:
            while True:
                if not s.recv(1 << 16, socket.MSG_DONTWAIT):
                    shed[kind] += 1
                    break
        except BlockingIOError:
            pass
        except OSError:
            shed[kind] += 1
    for s in socks + kept:
        s.close()
    latencies = [r[1] for r in results]
    bad = [r for r in results if r[0] != 200 or r[1] >= 2.0]
    ok = not bad and sum(shed.values()) == newcomers
    row = (f"| {count + readers} stalled connections fill --max-conns ({made['head']} half heads, {made['body']} bodies never sent, "
           f"{count // per} addresses; {made['reader']} bundle readers that never read), then {newcomers} newcomers | "
           f"filled in {filled:.1f} s; newcomers {newcomers - len(bad)}/{newcomers} served, p50 {percentile(latencies, 50) * 1000:.0f} ms, "
           f"max {max(latencies) * 1000:.0f} ms; shed {dict(shed)} | every newcomer 200 < 2 s, one stalled connection shed for each "
           f"| {'ok' if ok else 'FAIL'} |")
    return ok, {"mode": "stalled", "connections": count + readers, "kinds": dict(made), "fill_seconds": round(filled, 1),
                "newcomers": newcomers, "newcomers_failed": [list(r) for r in bad][:5],
                "newcomer_p50_ms": round(percentile(latencies, 50) * 1000, 1), "newcomer_max_ms": round(max(latencies) * 1000, 1),
                "shed": dict(shed), "row": row}


def main():
    url, mode = sys.argv[1], sys.argv[2]
    parts = urllib.parse.urlsplit(url)
    if mode == "budget":
        ok, report = budget(parts.hostname, parts.port, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]))
    elif mode == "stalled":
        ok, report = stalled(parts.hostname, parts.port, int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]),
                             float(sys.argv[7]), sys.argv[8])
    else:
        sys.exit(__doc__)
    print(json.dumps(report))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
