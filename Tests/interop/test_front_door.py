"""patchd's front door (issue 10, items 1, 3, 4 and 6): strict HTTP/1.1 framing against
request smuggling (RFC 9112), JSON for every error, and bodies admitted from the request head
(route, auth, size) before a byte of them is read. Black box, over raw sockets (raw_http.py)
against a live patchd. Load, budget, deadlines, connection and per-IP limits:
test_front_door_limits.py.

    PATCHCTL=... PATCHD=... python -m pytest -s Tests/interop/test_front_door*.py
"""

import time

import pytest
from front_door_support import HEALTHZ, PUBLISH, answered, msg, publish_head, refused, ws  # noqa: F401 (ws: a fixture)
from patchd_support import Patchd
from raw_http import RawConn, json_error


@pytest.fixture(scope="module")
def server(ws):
    s = Patchd(ws)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def token(ws):
    """A publisher token for demo, for requests that are refused (no change is made)."""
    return ws.token("--app", "demo", "--name", "front-door")


# -- positive controls: what is well formed is served --------------------------------------

def test_pipelined_well_formed_requests_are_all_answered_on_one_connection(server):
    with RawConn(server.url) as conn:
        conn.send(HEALTHZ + HEALTHZ + msg("GET /v1/apps/demo/metadata/1.root.json HTTP/1.1", "Host: x"))
        statuses = [getattr(conn.response(2.0), "status", None) for _ in range(3)]
        assert statuses == [200, 200, 200]
        assert not conn.wait_closed(0.3), "a keep-alive connection was closed after good requests"


def test_a_head_just_under_the_limits_is_served(server):
    line = "GET /healthz?" + "a" * 7000 + " HTTP/1.1"
    assert answered(server.url, msg(line, "Host: x")).status == 200
    pads = [f"X-Pad-{i:02}: " + "a" * 1000 for i in range(28)]
    assert answered(server.url, msg("GET /healthz HTTP/1.1", "Host: x", *pads)).status == 200


def test_http_1_0_without_host_and_a_tab_in_a_header_value_are_served(server):
    assert answered(server.url, msg("GET /healthz HTTP/1.0")).status == 200
    assert answered(server.url, msg("GET /healthz HTTP/1.1", "Host: x", "X-Note: a\tb")).status == 200


def test_chunked_publish_any_case_is_accepted(ws, server):
    tok = ws.token("--app", "demo")
    body = b"chunked();\n"
    data = msg(f"POST {PUBLISH.format('6.1')} HTTP/1.1", "Host: x", f"Authorization: Bearer {tok}",
               "Transfer-Encoding: Chunked", body=b"4\r\n" + body[:4] + b"\r\n7\r\n" + body[4:] + b"\r\n0\r\n\r\n")
    resp = answered(server.url, data, timeout=5)
    assert resp.status == 201, resp
    assert [p["sha256"] for p in ws.listing() if p["appVersion"] == "6.1"] != []


# -- framing and smuggling: 400/501/505 at once, then close ---------------------------------

SMUGGLED = b"GET /healthz?smuggled HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.mark.parametrize("covers", ["chunks-only", "chunks-and-smuggled"])
def test_content_length_with_transfer_encoding_is_400_and_the_smuggled_request_is_not_answered(server, covers):
    chunks = b"0\r\n\r\n"
    length = len(chunks) + (len(SMUGGLED) if covers == "chunks-and-smuggled" else 0)
    refused(server.url, msg("GET /healthz HTTP/1.1", "Host: x", f"Content-Length: {length}",
                            "Transfer-Encoding: chunked", body=chunks + SMUGGLED), 400)


@pytest.mark.parametrize("second", ["differ", "equal"])
def test_two_content_length_headers_are_400_and_the_rest_is_not_served(server, second):
    first, other = (0, len(SMUGGLED)) if second == "differ" else (0, 0)
    refused(server.url, msg("GET /healthz HTTP/1.1", "Host: x", f"Content-Length: {first}",
                            f"Content-Length: {other}", body=SMUGGLED), 400)


def test_whitespace_before_the_colon_is_400(server):
    refused(server.url, msg("GET /healthz HTTP/1.1", "Host: x", "Transfer-Encoding : chunked",
                            body=b"0\r\n\r\n" + SMUGGLED), 400)


@pytest.mark.parametrize("fold", ["sp", "htab"])
def test_obs_fold_is_400_so_a_folded_300_byte_x_device_id_cannot_pass(server, fold):
    folded = "X-Device-ID: " + "a" * 150 + "\r\n" + (" " if fold == "sp" else "\t") + "b" * 150
    refused(server.url, msg("GET /v1/apps/demo/metadata/1.root.json HTTP/1.1", "Host: x", folded), 400)


@pytest.mark.parametrize("coding", ["gzip", "gzip, chunked", "identity"])
def test_unknown_transfer_coding_is_501_within_2_s(server, token, coding):
    started = time.monotonic()
    refused(server.url, msg(f"POST {PUBLISH.format('2.3')} HTTP/1.1", "Host: x", f"Authorization: Bearer {token}",
                            f"Transfer-Encoding: {coding}", body=b"5\r\nx();\n\r\n0\r\n\r\n"), 501)
    assert time.monotonic() - started < 2.0


def test_chunked_in_http_1_0_is_400(server, token):
    refused(server.url, msg(f"POST {PUBLISH.format('2.3')} HTTP/1.0", "Host: x", f"Authorization: Bearer {token}",
                            "Transfer-Encoding: chunked", body=b"5\r\nx();\n\r\n0\r\n\r\n"), 400)


@pytest.mark.parametrize("chunks", [b"zz\r\nx();\n\r\n0\r\n\r\n", b"5\r\nx();\nEXTRA\r\n0\r\n\r\n",
                                    b"-5\r\nx();\n\r\n0\r\n\r\n", b"5\nx();\n\n0\n\n"],
                         ids=["non-hex-size", "data-longer-than-size", "negative-size", "bare-lf"])
def test_malformed_chunk_framing_is_400_and_publishes_nothing(ws, server, token, chunks):
    before = ws.listing()
    refused(server.url, msg(f"POST {PUBLISH.format('8.8')} HTTP/1.1", "Host: x", f"Authorization: Bearer {token}",
                            "Transfer-Encoding: chunked", body=chunks), 400)
    assert ws.listing() == before


@pytest.mark.parametrize("byte", [b"\x00", b"\t", b"\x01", b"\x7f"], ids=["nul", "tab", "soh", "del"])
def test_raw_control_byte_in_the_target_is_400(server, byte):
    refused(server.url, msg(b"GET /healthz" + byte + b"xyz HTTP/1.1", "Host: x"), 400)


def test_raw_nul_in_the_publish_query_is_400_and_nothing_is_published(ws, server, token):
    before = ws.listing()
    refused(server.url, msg(b"POST /v1/apps/demo/patches?appVersion=7.7\x00evil HTTP/1.1", "Host: x",
                            f"Authorization: Bearer {token}", "Content-Length: 5", body=b"x();\n"), 400)
    after = ws.listing()
    assert not [p for p in after if p["appVersion"].startswith("7.7")], "appVersion=7.7\\0evil was published"
    assert after == before


@pytest.mark.parametrize("value", [b"a\x00b", b"a\x01b", b"a\x1fb", b"a\x7fb", b"a\rb"], ids=["nul", "soh", "us", "del", "cr"])
def test_control_byte_in_a_header_value_is_400(server, value):
    refused(server.url, msg("GET /healthz HTTP/1.1", "Host: x", b"X-Note: " + value), 400)


@pytest.mark.parametrize("data", [b"GET /healthz HTTP/1.1\nHost: x\n\n", b"GET /healthz HTTP/1.1\r\nHost: x\nX-A: b\r\n\r\n",
                                  b"GET /healthz HTTP/1.1\nHost: x\r\n\r\n"],
                         ids=["every-line", "one-header-line", "request-line"])
def test_bare_lf_line_end_is_400(server, data):
    refused(server.url, data, 400)


@pytest.mark.parametrize("version", ["HTTP/2.0", "HTTP/3.0"])
def test_http_version_other_than_1_0_or_1_1_is_505(server, version):
    refused(server.url, msg(f"GET /healthz {version}", "Host: x"), 505)


def test_request_line_over_8_kib_is_414(server):
    refused(server.url, msg("GET /healthz?" + "a" * 9000 + " HTTP/1.1", "Host: x"), 414)


@pytest.mark.parametrize("shape", ["many-headers", "one-huge-header"])
def test_head_over_32_kib_is_431(server, shape):
    pads = ([f"X-Pad-{i:02}: " + "a" * 1000 for i in range(40)] if shape == "many-headers"
            else ["X-Pad: " + "a" * 34000])
    refused(server.url, msg("GET /healthz HTTP/1.1", "Host: x", *pads), 431)


def test_http_1_1_without_host_is_400(server):
    refused(server.url, msg("GET /healthz HTTP/1.1"), 400)


@pytest.mark.parametrize("value", ["abc", "-1", "+5", "5 5", "5,5", "0x10", "1.0", "", "99999999999999999999999"])
def test_bad_content_length_is_400_with_the_status_line_only_once(server, token, value):
    refused(server.url, msg(f"POST {PUBLISH.format('2.3')} HTTP/1.1", "Host: x", f"Authorization: Bearer {token}",
                            f"Content-Length: {value}", body=b"x();\n"), 400)


def test_expect_other_than_100_continue_is_417(server, token):
    resp = answered(server.url, publish_head(token, 5, "2.3", "Expect: 200-ok"), timeout=1.0)
    json_error(resp, 417)


def test_duplicate_x_device_id_is_400(server):
    for path in ("/v1/apps/demo/metadata/1.root.json", "/v1/apps/demo/versions/2.3/patch"):
        resp = answered(server.url, msg(f"GET {path} HTTP/1.1", "Host: x", "X-Device-ID: device-a", "X-Device-ID: device-b"))
        json_error(resp, 400)


# -- body admission: decided from the head, before a body byte is read ----------------------

TEN_MIB = 10 << 20


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_healthz_with_a_10_mib_body_is_refused_at_once_without_reading_it(server, method):
    """Only the head is sent: an answer within 1 s means the body was never waited for."""
    with RawConn(server.url) as conn:
        conn.send(msg(f"{method} /healthz HTTP/1.1", "Host: x", f"Content-Length: {TEN_MIB}"))
        resp = conn.response(1.0)
        assert resp is not None, "no answer within 1 s: the server waits for a body it does not need"
        assert resp.status in ((405, 413) if method == "POST" else (413,)), resp
        json_error(resp, resp.status)
        assert conn.wait_closed(1.0)


def test_rollout_body_over_4_kib_is_413_without_reading_it(server, token):
    with RawConn(server.url) as conn:
        conn.send(msg("POST /v1/apps/demo/versions/2.3/patches/1/rollout HTTP/1.1", "Host: x",
                      f"Authorization: Bearer {token}", "Content-Length: 5000"))
        json_error(conn.response(1.0), 413)
        assert conn.wait_closed(1.0)


def test_unauthenticated_publish_with_expect_gets_401_and_never_100_continue(server):
    with RawConn(server.url) as conn:
        conn.send(msg(f"POST {PUBLISH.format('2.3')} HTTP/1.1", "Host: x", f"Content-Length: {TEN_MIB}",
                      "Expect: 100-continue"))
        resp = conn.response(1.0)
        assert b"100 Continue" not in conn.received, "100 Continue was sent before authentication"
        json_error(resp, 401)
        assert conn.wait_closed(1.0)
        assert b"100 Continue" not in conn.received


def test_authenticated_publish_with_expect_gets_100_continue_then_201(ws, server):
    tok = ws.token("--app", "demo")
    body = b"expected();\n"
    with RawConn(server.url) as conn:
        conn.send(publish_head(tok, len(body), "6.2", "Expect: 100-continue"))
        first = conn.response(1.0)
        assert first is not None and first.status == 100, f"expected 100 Continue, got {first}"
        conn.send(body)
        resp = conn.response(5.0)
        assert resp is not None and resp.status == 201, resp


@pytest.mark.parametrize("case", ["no-token", "unknown-token", "auditor-token", "unknown-app"])
def test_publish_refused_from_its_head_is_answered_without_reading_the_body(ws, server, token, case):
    """Route, token and role are decided from the head: the answer comes within 1 s although
    only the head of a 10 MiB upload was sent."""
    path, auth, status = PUBLISH.format("2.3"), [f"Authorization: Bearer {token}"], {
        "no-token": 401, "unknown-token": 401, "auditor-token": 403, "unknown-app": 404}[case]
    if case == "no-token":
        auth = []
    elif case == "unknown-token":
        auth = ["Authorization: Bearer hp_" + "0" * 64]
    elif case == "auditor-token":
        auth = [f"Authorization: Bearer {ws.token('--app', 'demo', '--role', 'auditor')}"]
    else:  # a token for every app, so the answer is about the app, not the token's scope
        path = "/v1/apps/nosuchapp/patches?appVersion=2.3"
        auth = [f"Authorization: Bearer {ws.token('--all')}"]
    with RawConn(server.url) as conn:
        conn.send(msg(f"POST {path} HTTP/1.1", "Host: x", *auth, f"Content-Length: {TEN_MIB}"))
        resp = conn.response(1.0)
        assert resp is not None, "no answer within 1 s: the body is read before the request is refused"
        json_error(resp, status)
        assert conn.wait_closed(1.0)


def test_per_ip_limit_is_applied_before_the_body_is_read(server):
    """tight allows 3 requests a minute per address; the 4th, an upload, is refused with 429
    from its head (from an address of its own, so no other test shares the bucket)."""
    for _ in range(3):
        assert answered(server.url, msg("GET /v1/apps/tight/metadata/1.root.json HTTP/1.1", "Host: x"),
                        source="127.0.0.9").status == 200
    with RawConn(server.url, source="127.0.0.9") as conn:
        conn.send(msg("POST /v1/apps/tight/patches?appVersion=2.3 HTTP/1.1", "Host: x", f"Content-Length: {TEN_MIB}"))
        resp = conn.response(1.0)
        json_error(resp, 429)
        assert int(resp.header("retry-after")) > 0
        assert conn.wait_closed(1.0)





# -- the request target and head limits (issue 19, items 2, 5 and 6) -------------------------

@pytest.mark.parametrize("path", ["/%6detrics", "/%6Detrics", "/%68ealthz", "/v1%2Fapps/demo/metadata/1.root.json",
                                  "/v1/apps/demo%2fmetadata/1.root.json", "/v1%5Capps/demo/metadata/1.root.json",
                                  "/v1/apps/demo/metadata/%31.root.json", "/console/%2e%2e/Package.swift"],
                         ids=["m", "M", "h", "slash", "slash-lower", "backslash", "digit", "dots"])
def test_a_path_that_encodes_an_unreserved_byte_or_a_separator_is_400_and_closed(server, path):
    """A proxy ACL keeping /metrics off the public network reads `/%6detrics` as another path
    than /metrics: patchd must not serve it as /metrics (before: 200 with the metrics)."""
    resp = refused(server.url, msg(f"GET {path} HTTP/1.1", "Host: x"), 400)
    assert b"hotpatch_" not in resp.body and b"\"status\"" not in resp.body, resp.body[:300]


def test_the_routes_those_paths_decode_to_answer_and_other_escapes_are_decoded(server):
    assert answered(server.url, msg("GET /metrics HTTP/1.1", "Host: x")).status == 200
    assert answered(server.url, msg("GET /healthz HTTP/1.1", "Host: x")).status == 200
    # The query is decoded as before (no route is chosen by it), and so are escapes of
    # reserved bytes or spaces in a path: they name no route, so 404 JSON, not a refusal.
    assert answered(server.url, msg("GET /healthz?x=%6d%2F HTTP/1.1", "Host: x")).status == 200
    json_error(answered(server.url, msg("GET /healthz%20 HTTP/1.1", "Host: x")), 404)


@pytest.mark.parametrize("target,host", [("http://127.0.0.1/healthz", "127.0.0.1"), ("HTTP://LOCALHOST:80/healthz", "localhost"),
                                         ("http://127.0.0.1:{port}/v1/apps/demo/metadata/1.root.json", "127.0.0.1:{port}"),
                                         ("https://[::1]/healthz", "[0:0::1]:443")],
                         ids=["http", "scheme-case-default-port", "port", "https-ipv6"])
def test_an_absolute_form_target_is_served(server, target, host):
    port = server.url.rsplit(":", 1)[1]
    resp = answered(server.url, msg(f"GET {target.format(port=port)} HTTP/1.1", f"Host: {host.format(port=port)}"))
    assert resp.status == 200, resp


@pytest.mark.parametrize("target,host", [("http://127.0.0.1/healthz", "evil.example"), ("http://127.0.0.1:8080/healthz", "127.0.0.1"),
                                         ("http://user@127.0.0.1/healthz", "127.0.0.1"), ("http://127.1/healthz", "127.1"),
                                         ("http://127.0.0.1/healthz", ""), ("/healthz", "a@b"), ("/healthz", "a,b"),
                                         ("/healthz", "x:99999")],
                         ids=["other-host", "other-port", "userinfo", "short-ipv4", "empty-host", "host-userinfo",
                              "host-list", "host-port"])
def test_an_invalid_or_disagreeing_host_is_400(server, target, host):
    refused(server.url, msg(f"GET {target} HTTP/1.1", f"Host: {host}"), 400)


def test_the_status_line_of_an_accepted_report_is_202_accepted(server):
    body = b'{"events": [{"id": "e1", "type": "installed", "appVersion": "2.3", "patch": 1, "at": "2026-12-01T10:00:00Z"}]}'
    with RawConn(server.url) as conn:
        conn.send(msg("POST /v1/apps/demo/reports HTTP/1.1", "Host: x", "X-Device-ID: status-line",
                      "Content-Type: application/json", f"Content-Length: {len(body)}", body=body))
        resp = conn.response(3.0)
        assert resp is not None and resp.status == 202, resp
        assert conn.received.startswith(b"HTTP/1.1 202 Accepted\r\n"), conn.received[:100]


def test_100_header_lines_are_served_and_the_101st_is_431_before_the_head_ends(server):
    lines = [f"X-Line-{i:03}: v" for i in range(99)]
    assert answered(server.url, msg("GET /healthz HTTP/1.1", "Host: x", *lines)).status == 200
    refused(server.url, msg("GET /healthz HTTP/1.1", "Host: x", *lines, "X-Line-099: v"), 431)
    # The 101st line's first bytes are enough: no empty line is ever sent.
    head = "\r\n".join(["GET /healthz HTTP/1.1", "Host: x", *lines, "X-Line-099: v", "X-Line-100"]).encode()
    resp = refused(server.url, head, 431)
    assert json_error(resp, 431)["code"] == "headers_too_large"
