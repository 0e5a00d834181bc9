"""Report receipts for simulated devices in the benchmarks: what patchd hands a device with the
bundle it downloads (X-Patch-Receipt), computed here from the registry's receipt secret so a
flood of a million devices does not need a million downloads first. The same construction as
ReportReceipt (Sources/PatchRegistry/Reports/ReportRules.swift); tests get theirs by download."""
import hashlib
import hmac
import secrets
import sqlite3


def secret(sqlite_path):
    """The registry's receipt secret (registry_secrets), as bytes. The registry creates it on
    first use (Registry.reportReceipts), so before any download it may not be there yet: then
    it is created here the same way (32 random bytes, hex; a row already there wins), and
    patchd reads this one when it first hands out a receipt."""
    db = sqlite3.connect(sqlite_path, timeout=30)
    try:
        with db:
            db.execute("INSERT INTO registry_secrets(name, value) VALUES ('report_receipts', ?) ON CONFLICT(name) DO NOTHING",
                       (secrets.token_hex(32),))
        (value,) = db.execute("SELECT value FROM registry_secrets WHERE name = 'report_receipts'").fetchone()
    finally:
        db.close()
    return bytes.fromhex(value)


def receipt(key, device, patch=1, version="2.3", channel="production", app="demo"):
    text = f"hotpatch-receipt-v1|{app}|{version}|{channel}|{patch}|{device}".encode()
    return hmac.new(key, text, hashlib.sha256).hexdigest()[:32]


def address(i):
    """Simulated device i's address, in a /16 block of its own (for X-Forwarded-For)."""
    return f"{10 + (i // 250) % 200}.{i % 250}.{(i // 50000) % 250}.1"
