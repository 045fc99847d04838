"""Ed25519 attestations: the lab signs results it ran itself; anyone verifies with the committed public key.

The signed bytes are :meth:`runner.schema.Results.signed_payload` (the whole results file but the signature), so
the bot that signs and the site that verifies can never disagree on what was signed, and no field the site shows
can be changed in a copy that still verifies. The attestation also names the repository path the bot committed
the file to: a signed copy at another path is a copy, not the attested run (:func:`at_attested_path`). Keys are PEM (private: PKCS#8, public: SubjectPublicKeyInfo).
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from runner.schema import Results


def generate_keypair() -> tuple[bytes, bytes]:
    """Return (private PEM, public PEM) for a fresh Ed25519 key."""
    key = Ed25519PrivateKey.generate()
    priv = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    pub = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return priv, pub


def load_public_key(pem: bytes) -> Ed25519PublicKey:
    key = serialization.load_pem_public_key(pem)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("public key is not Ed25519")
    return key


def load_private_key(pem: bytes) -> Ed25519PrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError("private key is not Ed25519")
    return key


def key_id(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def sign(results: Results, private_pem: bytes) -> Results:
    """Return a copy of ``results`` whose attestation carries a signature (the attestation must be set)."""
    if results.attestation is None:
        raise ValueError("results have no attestation to sign")
    key = load_private_key(private_pem)
    att = results.attestation.model_copy(update={"signer": key_id(key.public_key()), "signature": None})
    unsigned = results.model_copy(update={"attestation": att})
    sig = base64.b64encode(key.sign(unsigned.signed_payload())).decode()
    return results.model_copy(update={"attestation": att.model_copy(update={"signature": sig})})


def verify(results: Results, public_pem: bytes) -> bool:
    """True only when the attestation is signed by this key over exactly these results."""
    att = results.attestation
    if att is None or not att.signature:
        return False
    if att.run_id != results.run_id:
        return False
    try:
        key = load_public_key(public_pem)
        if att.signer != key_id(key):
            return False
        key.verify(base64.b64decode(att.signature, validate=True), results.signed_payload())
    except (InvalidSignature, ValueError):
        return False
    return True


def at_attested_path(results: Results, url: str) -> bool:
    """Whether ``url`` is where the attestation says the file lives (True when it names no path)."""
    path = results.attestation.path if results.attestation else None
    if not path:
        return True
    u, p = url.replace("\\", "/"), path.strip("/")
    return u == p or u.endswith("/" + p)
