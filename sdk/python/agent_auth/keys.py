"""Agent assertions: the short JWT an agent signs with its private key (Ed25519 or P-256) in place of
its secret, one per authenticate call (docs/protocol.md, "Agent assertions"). Needs the
``cryptography`` package: ``pip install "agent-auth[keys]"``; the rest of the SDK does not."""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from typing import Any, Dict, Optional, Union

#: The ``typ`` of an assertion's header, and the longest life (``exp - iat``) the server accepts.
ASSERTION_TYPE = "agent-auth+jwt"
ASSERTION_LIFETIME = 60


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _json_b64url(value: Any) -> str:
    return _b64url(json.dumps(value, separators=(",", ":")).encode("utf-8"))


class AgentKey:
    """A private key that signs this agent's assertions: PEM text or bytes (PKCS#8, SEC1), or a
    ``cryptography`` Ed25519 or P-256 private key. ``key_id``: the key's id at the server; by default
    its RFC 7638 thumbprint, which is how the server names a key registered without one."""

    def __init__(self, private_key: Union[str, bytes, Any], key_id: Optional[str] = None) -> None:
        try:
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import ec, ed25519
            from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
        except ImportError as err:
            raise ImportError('signing in with a key needs the cryptography package: pip install "agent-auth[keys]"') from err
        key = private_key
        if isinstance(key, (str, bytes)):
            key = serialization.load_pem_private_key(key.encode("ascii") if isinstance(key, str) else key, password=None)
        if isinstance(key, ed25519.Ed25519PrivateKey):
            self.algorithm = "EdDSA"
            raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            members = {"crv": "Ed25519", "kty": "OKP", "x": _b64url(raw)}
            self._sign = key.sign
        elif isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, ec.SECP256R1):
            self.algorithm = "ES256"
            numbers = key.public_key().public_numbers()
            members = {"crv": "P-256", "kty": "EC", "x": _b64url(numbers.x.to_bytes(32, "big")), "y": _b64url(numbers.y.to_bytes(32, "big"))}

            def sign_es256(data: bytes) -> bytes:
                # JWS wants r || s, 32 bytes each, where cryptography gives DER.
                r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
                return r.to_bytes(32, "big") + s.to_bytes(32, "big")

            self._sign = sign_es256
        else:
            raise ValueError("private_key must be an Ed25519 or a P-256 private key")
        # RFC 7638 section 3: the required members in lexicographic order, no whitespace.
        self.key_id = key_id or _b64url(hashlib.sha256(json.dumps(members, separators=(",", ":")).encode("ascii")).digest())

    def assertion(self, agent_id: str, issuer: str, request_id: str) -> str:
        """A fresh assertion for one authenticate call: ``agent_id`` signing in at ``issuer`` for ``request_id``."""
        return self._jwt(ASSERTION_TYPE, {"iss": agent_id, "sub": agent_id, "aud": issuer, "request_id": request_id})

    def client_assertion(self, client_id: str, issuer: str) -> str:
        """A ``private_key_jwt`` client assertion (RFC 7523): the client ``client_id`` at the token endpoint of ``issuer``."""
        return self._jwt("JWT", {"iss": client_id, "sub": client_id, "aud": issuer})

    def _jwt(self, typ: str, claims: Dict[str, Any]) -> str:
        """A compact JWS of ``claims``, issued now, valid ASSERTION_LIFETIME seconds, used once."""
        now = int(time.time())
        header = _json_b64url({"alg": self.algorithm, "kid": self.key_id, "typ": typ})
        payload = _json_b64url({**claims, "iat": now, "exp": now + ASSERTION_LIFETIME, "jti": str(uuid.uuid4())})
        signature = self._sign(f"{header}.{payload}".encode("ascii"))
        return f"{header}.{payload}.{_b64url(signature)}"

    def __repr__(self) -> str:
        return f"AgentKey(algorithm={self.algorithm!r}, key_id={self.key_id!r})"
