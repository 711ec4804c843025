#!/usr/bin/env python3
"""Writes vectors.json: envelopes of format v1 (docs/encryption.md) computed with Python's
cryptography package and hashlib, independently of the Go (envelope/) and JavaScript
(api/site/static/e2e.js) implementations, which both must open them. Run: python3 vectors.py"""
import base64, hashlib, json, struct, unicodedata

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

KEY, SALT, NONCE = bytes(range(32)), bytes(range(100, 116)), bytes(range(200, 212))
DETAILS = {"title": "Ünïcode title", "filename": "main.go", "language": "go"}
TEXT = b"package main\n"


def vector(written, canonical, password_as_typed):
    meta = json.dumps(DETAILS, ensure_ascii=False, separators=(",", ":")).encode()
    plain = struct.pack(">I", len(meta)) + meta + TEXT
    if "pbkdf2" in canonical:
        password = unicodedata.normalize("NFC", password_as_typed).encode()
        aes_key = hashlib.pbkdf2_hmac("sha256", KEY + password, SALT, 600000, 32)
        head = b"\x01" + SALT + NONCE
    else:
        aes_key, head = KEY, b"\x01" + NONCE
    body = head + AESGCM(aes_key).encrypt(NONCE, plain, canonical.encode())
    return dict(format=written, key=base64.urlsafe_b64encode(KEY).rstrip(b"=").decode(),
                password=password_as_typed, body_hex=body.hex(), text=TEXT.decode(), **DETAILS)


doc = {
    "comment": "Written by vectors.py. The second format is written loosely on purpose, and its "
               "password is in NFD: readers parse the one and normalise the other to NFC.",
    "vectors": [
        vector("v1; kdf=none", "v1; kdf=none", ""),
        vector("v1;kdf=pbkdf2-sha256;  iter=600000", "v1; kdf=pbkdf2-sha256; iter=600000", "pa\u0302ssword"),
    ],
}
with open("vectors.json", "w") as f:
    f.write(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
