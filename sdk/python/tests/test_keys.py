"""Signing in with a key (AgentAuthClient(..., private_key=...)) against a real agent-auth server."""

from __future__ import annotations

import base64
import json
import unittest

from agent_auth import AgentAuthClient, AgentKey, InvalidCredentialsError, find_request_id

from .support import Browser, Server

try:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519
except ImportError:  # the core SDK runs without it; these tests need it (CI installs python3-cryptography)
    raise unittest.SkipTest('needs the cryptography package: pip install "agent-auth[keys]"')


def public_jwk(key) -> dict:
    """The public JWK of a private key, as the admin API takes it."""
    public = key.public_key()
    if isinstance(key, ed25519.Ed25519PrivateKey):
        raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return {"kty": "OKP", "crv": "Ed25519", "x": _b64url(raw)}
    numbers = public.public_numbers()
    return {"kty": "EC", "crv": "P-256", "x": _b64url(numbers.x.to_bytes(32, "big")), "y": _b64url(numbers.y.to_bytes(32, "big"))}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class KeySignInTest(unittest.TestCase):
    server: Server

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server("main")
        cls.website = cls.server.create_client()

    def key_only_agent(self, key) -> str:
        agent = self.server.create_agent()
        registered = self.server.admin("POST", f"/admin/agents/{agent['agent_id']}/keys", {"jwk": public_jwk(key)})
        self.server.admin("PATCH", f"/admin/agents/{agent['agent_id']}", {"secret_enabled": False})
        self.kid = registered["kid"]
        self.secret = agent["agent_secret"]
        return agent["agent_id"]

    def sign_in(self, client: AgentAuthClient) -> dict:
        browser = Browser(self.server)
        page = browser.open_authorize(self.website)
        thread = browser.complete_once_authenticated(find_request_id(page.html) or "")
        result = client.sign_in(page, expected_website="http://127.0.0.1:9")
        thread.join(30)
        self.assertIn("code", browser.landed)
        return result

    def test_signs_in_with_an_ed25519_pem_and_a_p256_key_object(self) -> None:
        ed = ed25519.Ed25519PrivateKey.generate()
        pem = ed.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
        agent_id = self.key_only_agent(ed)
        self.assertEqual(AgentKey(pem).key_id, self.kid)
        self.assertEqual(self.sign_in(AgentAuthClient(self.server.url, agent_id, model="gpt-test", private_key=pem))["status"], "completed")

        p256 = ec.generate_private_key(ec.SECP256R1())
        agent_id = self.key_only_agent(p256)
        self.assertEqual(self.sign_in(AgentAuthClient(self.server.url, agent_id, model="gpt-test", private_key=p256))["status"], "completed")
        # The secret of a key-only agent is refused like a wrong one.
        browser = Browser(self.server)
        request_id = find_request_id(browser.open_authorize(self.website).html) or ""
        with self.assertRaises(InvalidCredentialsError):
            AgentAuthClient(self.server.url, agent_id, self.secret, "gpt-test").authenticate(request_id)

    def test_a_key_the_server_does_not_hold_is_invalid_credentials(self) -> None:
        agent_id = self.key_only_agent(ed25519.Ed25519PrivateKey.generate())
        stranger = ed25519.Ed25519PrivateKey.generate()
        request_id = find_request_id(Browser(self.server).open_authorize(self.website).html) or ""
        for client in (
            AgentAuthClient(self.server.url, agent_id, model="m", private_key=stranger),
            AgentAuthClient(self.server.url, agent_id, model="m", private_key=stranger, key_id=self.kid),
        ):
            with self.assertRaises(InvalidCredentialsError):
                client.authenticate(request_id)

    def test_every_call_signs_a_new_assertion(self) -> None:
        key = AgentKey(ed25519.Ed25519PrivateKey.generate())
        first, second = key.assertion("agent_a", "https://auth.example", "req_1"), key.assertion("agent_a", "https://auth.example", "req_1")
        self.assertNotEqual(first, second)
        header = json.loads(_b64url_decode(first.split(".")[0]))
        self.assertEqual(header, {"alg": "EdDSA", "kid": key.key_id, "typ": "agent-auth+jwt"})
        claims = json.loads(_b64url_decode(first.split(".")[1]))
        self.assertEqual((claims["iss"], claims["sub"], claims["aud"], claims["request_id"]), ("agent_a", "agent_a", "https://auth.example", "req_1"))
        self.assertEqual(claims["exp"] - claims["iat"], 60)

    def test_exactly_one_credential(self) -> None:
        for kwargs in ({}, {"agent_secret": "s", "private_key": ed25519.Ed25519PrivateKey.generate()}):
            with self.assertRaises(ValueError):
                AgentAuthClient("https://auth.example", "agent_a", model="m", **kwargs)


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


if __name__ == "__main__":
    unittest.main()
