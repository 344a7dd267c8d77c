"""Agent assertions: the short JWT an agent signs with its private key (Ed25519 or P-256) in place of
its secret, one per authenticate call (docs/protocol.md, "Agent assertions"); and signed agent
requests: the Web Bot Auth signature (RFC 9421) an agent puts on each HTTP request it makes
(docs/protocol.md, "Signed agent requests"). Needs the ``cryptography`` package:
``pip install "agent-auth[keys]"``; the rest of the SDK does not."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
import uuid
from typing import Any, Dict, Optional, Union
from urllib.parse import urlsplit

#: The ``typ`` of an assertion's header, and the longest life (``exp - iat``) the server accepts.
ASSERTION_TYPE = "agent-auth+jwt"
ASSERTION_LIFETIME = 60


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _json_b64url(value: Any) -> str:
    return _b64url(json.dumps(value, separators=(",", ":")).encode("utf-8"))


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _private_key(private_key: Union[str, bytes, Dict[str, str], Any]) -> Any:
    """A ``cryptography`` private key from PEM text or bytes, a private Ed25519 JWK, or a key object."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as err:
        raise ImportError('signing with a key needs the cryptography package: pip install "agent-auth[keys]"') from err
    if isinstance(private_key, dict):
        if private_key.get("kty") != "OKP" or private_key.get("crv") != "Ed25519" or "d" not in private_key:
            raise ValueError("a JWK private_key must be a private Ed25519 key (kty OKP, crv Ed25519, with d)")
        return ed25519.Ed25519PrivateKey.from_private_bytes(_b64url_decode(private_key["d"]))
    if isinstance(private_key, (str, bytes)):
        return serialization.load_pem_private_key(private_key.encode("ascii") if isinstance(private_key, str) else private_key, password=None)
    return private_key


def _thumbprint(members: Dict[str, str]) -> str:
    # RFC 7638 section 3: the required members in lexicographic order, no whitespace.
    return _b64url(hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode("ascii")).digest())


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
        key = _private_key(private_key)
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
        self.key_id = key_id or _thumbprint(members)

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


#: Web Bot Auth's names: the signature's tag, the header naming the key directory, the default lifetime.
WEB_BOT_AUTH_TAG = "web-bot-auth"
SIGNATURE_AGENT = "Signature-Agent"
SIGNATURE_LIFETIME = 300


class RequestSigningKey:
    """A private Ed25519 key that signs this agent's HTTP requests (Web Bot Auth): PEM text or bytes,
    a private JWK (``{"kty": "OKP", "crv": "Ed25519", "x": ..., "d": ...}``, as ``agent-auth agents
    signing-keys add --generate`` writes it) or a ``cryptography`` Ed25519 key. ``issuer``: the
    agent-auth server whose key directory lists the key. Its ``key_id`` is the RFC 7638 thumbprint."""

    def __init__(self, private_key: Union[str, bytes, Dict[str, str], Any], issuer: str, expires_in: int = SIGNATURE_LIFETIME) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519

        key = _private_key(private_key)
        if not isinstance(key, ed25519.Ed25519PrivateKey):
            raise ValueError("a request-signing key must be an Ed25519 private key")
        raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.key_id = _thumbprint({"crv": "Ed25519", "kty": "OKP", "x": _b64url(raw)})
        parts = urlsplit(issuer)
        self._agent = f'"{parts.scheme}://{parts.netloc}"'
        self._sign = key.sign
        self.expires_in = expires_in

    def headers(self, url: str) -> Dict[str, str]:
        """The headers that sign a request to ``url``: ``Signature-Agent``, ``Signature-Input`` (covering
        ``@authority`` and ``signature-agent``, with created, expires, keyid, alg, a nonce and
        ``tag="web-bot-auth"``) and ``Signature``. Add them to the request as they are."""
        # RFC 9421 section 2.2.3: host, lower case, and the port unless it is the scheme's default.
        parts = urlsplit(url)
        authority = parts.netloc.rpartition("@")[2].lower()
        if parts.port is not None and parts.port == {"http": 80, "https": 443}.get(parts.scheme):
            authority = authority.rsplit(":", 1)[0]
        created = int(time.time())
        nonce = base64.b64encode(os.urandom(64)).decode("ascii")
        params = (
            f'("@authority" "signature-agent");created={created};expires={created + self.expires_in};'
            f'keyid="{self.key_id}";alg="ed25519";nonce="{nonce}";tag="{WEB_BOT_AUTH_TAG}"'
        )
        base = f'"@authority": {authority}\n"signature-agent": {self._agent}\n"@signature-params": {params}'
        signature = base64.b64encode(self._sign(base.encode("ascii"))).decode("ascii")
        return {SIGNATURE_AGENT: self._agent, "Signature-Input": f"sig1={params}", "Signature": f"sig1=:{signature}:"}

    def __repr__(self) -> str:
        return f"RequestSigningKey(key_id={self.key_id!r})"
