"""A local stand-in for Apple's push provider API (APNs cannot be reached from the machines
the tests run on): HTTP/2 over TLS (ALPN h2, a certificate for 127.0.0.1 it makes, written
to `ca_file`) on 127.0.0.1, a port it picks,
`POST /3/device/{token}` checked the way APNs checks it — the ES256 provider token against
the .p8's public key, team and key ID, its age; the background-push headers; the payload —
and answered as the test scripts per token (200 by default). Everything it saw is kept for
the test to read. Used through HOTPATCH_APNS_URL and HOTPATCH_APNS_CA, which are for
tests only (`env`).
"""
import base64
import datetime
import ipaddress
import json
import socket
import ssl
import tempfile
import threading
import time
from pathlib import Path

import h2.config
import h2.connection
import h2.events
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.exceptions import InvalidSignature


def self_signed(directory):
    """A P-256 certificate for 127.0.0.1 and its key, as PEM files in `directory`."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = Path(directory) / "standin.crt", Path(directory) / "standin.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert_path, key_path


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class APNsStandIn:
    def __init__(self, public_key, team_id, key_id, topic):
        self.public_key, self.team_id, self.key_id, self.topic = public_key, team_id, key_id, topic
        self.lock = threading.Lock()
        self.script = {}        # token -> [(status, reason)], one per attempt; then 200
        self.accepted = []      # (token, headers, payload) answered 200
        self.attempts = {}      # token -> requests seen
        self.problems = []      # what APNs would have refused
        self.jwts = set()
        self.directory = tempfile.TemporaryDirectory()
        cert, key = self_signed(self.directory.name)
        self.ca_file = str(cert)
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(cert, key)
        self.tls.set_alpn_protocols(["h2"])
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self.env = {"HOTPATCH_APNS_URL": self.url, "HOTPATCH_APNS_CA": self.ca_file}
        self.running = True
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def stop(self):
        self.running = False
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            pass
        self.thread.join(5)
        self.sock.close()
        self.directory.cleanup()

    # -- checks --------------------------------------------------------------------------
    def _check_jwt(self, authorization):
        if not authorization.startswith("bearer "):
            return "MissingProviderToken"
        token = authorization[len("bearer "):]
        parts = token.split(".")
        if len(parts) != 3:
            return "InvalidProviderToken"
        header, claims, signature = json.loads(b64url(parts[0])), json.loads(b64url(parts[1])), b64url(parts[2])
        if header != {"alg": "ES256", "kid": self.key_id} or claims.get("iss") != self.team_id or set(claims) != {"iss", "iat"}:
            return "InvalidProviderToken"
        if not (time.time() - 3600 < claims["iat"] <= time.time() + 60):
            return "ExpiredProviderToken"
        if len(signature) != 64:
            return "InvalidProviderToken"
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
        try:
            self.public_key.verify(der, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return "InvalidProviderToken"
        with self.lock:
            self.jwts.add(token)
        return None

    def _answer(self, headers, body):
        path, method = headers.get(":path", ""), headers.get(":method")
        if method != "POST" or not path.startswith("/3/device/"):
            return 405 if method != "POST" else 404, "MethodNotAllowed" if method != "POST" else "BadPath"
        token = path[len("/3/device/"):]
        problem = self._check_jwt(headers.get("authorization", ""))
        if problem:
            with self.lock:
                self.problems.append((token, problem))
            return 403, problem
        expected = {"apns-push-type": "background", "apns-priority": "5", "apns-topic": self.topic}
        for name, value in expected.items():
            if headers.get(name) != value:
                with self.lock:
                    self.problems.append((token, f"{name}={headers.get(name)!r}"))
                return 400, "BadTopic" if name == "apns-topic" else "BadPriority" if name == "apns-priority" else "InvalidPushType"
        collapse, expiration = headers.get("apns-collapse-id", ""), headers.get("apns-expiration", "")
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if not (0 < len(collapse.encode()) <= 64) or not expiration.isdigit() or not payload \
                or payload.get("aps") != {"content-available": 1} or "hotpatch" not in payload or len(body) > 4096:
            with self.lock:
                self.problems.append((token, "payload or headers"))
            return 400, "BadPayload"
        with self.lock:
            self.attempts[token] = self.attempts.get(token, 0) + 1
            queued = self.script.get(token, [])
            status, reason = queued.pop(0) if queued else (200, None)
            if status == 200:
                self.accepted.append((token, headers, payload))
        return status, reason

    # -- HTTP/2 --------------------------------------------------------------------------
    def _accept(self):
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if not self.running:
                conn.close()
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, raw):
        try:
            conn = self.tls.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        if conn.selected_alpn_protocol() != "h2":
            with self.lock:
                self.problems.append(("", "not HTTP/2"))
            conn.close()
            return
        h2c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        h2c.initiate_connection()
        conn.sendall(h2c.data_to_send())
        streams = {}
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                for event in h2c.receive_data(data):
                    if isinstance(event, h2.events.RequestReceived):
                        streams[event.stream_id] = [dict(event.headers), b""]
                    elif isinstance(event, h2.events.DataReceived):
                        streams[event.stream_id][1] += event.data
                        h2c.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    elif isinstance(event, h2.events.StreamEnded):
                        headers, body = streams.pop(event.stream_id)
                        status, reason = self._answer(headers, body)
                        response = [(":status", str(status)), ("apns-id", "00000000-0000-0000-0000-000000000000")]
                        if reason is None:
                            h2c.send_headers(event.stream_id, response, end_stream=True)
                        else:
                            answer = json.dumps({"reason": reason}).encode()
                            h2c.send_headers(event.stream_id, response + [("content-type", "application/json")])
                            h2c.send_data(event.stream_id, answer, end_stream=True)
                conn.sendall(h2c.data_to_send())
        except (OSError, h2.exceptions.ProtocolError):
            return
        finally:
            conn.close()
