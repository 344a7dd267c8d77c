"""Signed agent requests (RequestSigningKey): the Web Bot Auth headers, checked against the key a real
agent-auth server's directory serves."""

from __future__ import annotations

import base64
import json
import re
import time
import unittest
import urllib.request

from agent_auth import RequestSigningKey

from .support import Server

try:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519
except ImportError:  # the core SDK runs without it; these tests need it (CI installs python3-cryptography)
    raise unittest.SkipTest('needs the cryptography package: pip install "agent-auth[keys]"')


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwks(key: ed25519.Ed25519PrivateKey) -> tuple:
    """The private JWK (as the CLI writes it) and the public one (as the admin API takes it)."""
    x = _b64url(key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))
    d = _b64url(key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()))
    return {"kty": "OKP", "crv": "Ed25519", "x": x, "d": d}, {"kty": "OKP", "crv": "Ed25519", "x": x}


class SignedRequestTest(unittest.TestCase):
    server: Server

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server("main")

    def directory_key(self, kid: str) -> ed25519.Ed25519PublicKey:
        with urllib.request.urlopen(f"{self.server.url}/.well-known/http-message-signatures-directory") as response:
            self.assertEqual(response.headers["Content-Type"], "application/http-message-signatures-directory+json")
            keys = json.load(response)["keys"]
        (jwk,) = [k for k in keys if k["kid"] == kid]
        return ed25519.Ed25519PublicKey.from_public_bytes(base64.urlsafe_b64decode(jwk["x"] + "=="))

    def test_signs_what_the_directory_key_verifies(self) -> None:
        key = ed25519.Ed25519PrivateKey.generate()
        private_jwk, public_jwk = jwks(key)
        agent = self.server.create_agent()
        kid = self.server.admin("POST", f"/admin/agents/{agent['agent_id']}/signing-keys", {"jwk": public_jwk})["kid"]

        for given in (private_jwk, key, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())):
            signer = RequestSigningKey(given, issuer=self.server.url + "/")
            self.assertEqual(signer.key_id, kid)
        headers = signer.headers("https://Shop.example:443/products?page=2")
        self.assertEqual(headers["Signature-Agent"], f'"{self.server.url}"')
        match = re.fullmatch(
            r'sig1=(\("@authority" "signature-agent"\);created=(\d+);expires=(\d+);keyid="([^"]+)";alg="ed25519";nonce="[A-Za-z0-9+/=]{88}";tag="web-bot-auth")',
            headers["Signature-Input"],
        )
        assert match is not None, headers["Signature-Input"]
        params, created, expires, keyid = match.groups()
        self.assertEqual(keyid, kid)
        self.assertEqual(int(expires) - int(created), 300)
        self.assertLessEqual(abs(int(created) - time.time()), 5)

        signature = base64.b64decode(re.fullmatch(r"sig1=:([A-Za-z0-9+/=]+):", headers["Signature"]).group(1))
        base = f'"@authority": shop.example\n"signature-agent": "{self.server.url}"\n"@signature-params": {params}'
        public = self.directory_key(kid)
        public.verify(signature, base.encode())
        with self.assertRaises(InvalidSignature):
            public.verify(signature, base.replace("shop.example", "other.example").encode())

    def test_refuses_keys_that_cannot_sign_requests(self) -> None:
        with self.assertRaises(ValueError):
            RequestSigningKey(ec.generate_private_key(ec.SECP256R1()), issuer=self.server.url)
        _, public_jwk = jwks(ed25519.Ed25519PrivateKey.generate())
        with self.assertRaises(ValueError):
            RequestSigningKey(public_jwk, issuer=self.server.url)
