"""Tokens for a resource (an MCP server) with no browser, against a real agent-auth server."""

from __future__ import annotations

import base64
import json
import secrets
import unittest

from agent_auth import AgentAuthClient, AgentAuthError, sign_in_for_resource

from .support import REDIRECT_URI, Server


def _part(jwt: str, index: int) -> dict:
    segment = jwt.split(".")[index]
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


class ResourceSignInTest(unittest.TestCase):
    server: Server

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server("main")
        cls.website = cls.server.create_client()
        cls.resource = f"https://mcp-{secrets.token_hex(4)}.example.com/mcp"
        cls.server.admin("POST", "/admin/resources", {"resource": cls.resource, "name": "Python MCP", "scopes": ["email", "notes:read"]})

    def agent(self) -> AgentAuthClient:
        self.created = self.server.create_agent()
        return AgentAuthClient(self.server.url, self.created["agent_id"], self.created["agent_secret"], "py-mcp-model")

    def test_returns_a_jwt_access_token_for_the_resource_through_a_given_client(self) -> None:
        agent = self.agent()
        tokens = sign_in_for_resource(
            agent, self.resource, client_id=self.website["client_id"], client_secret=self.website["client_secret"], redirect_uri=REDIRECT_URI
        )
        self.assertEqual(tokens["token_type"], "Bearer")
        self.assertTrue(tokens["refresh_token"])
        self.assertEqual(set(tokens["scope"].split()), {"email", "notes:read"})
        self.assertEqual(_part(tokens["access_token"], 0)["typ"], "at+jwt")
        claims = _part(tokens["access_token"], 1)
        self.assertEqual((claims["aud"], claims["sub"], claims["iss"]), (self.resource, agent.agent_id, self.server.url))
        self.assertEqual(claims["email"], self.created["email"])

    def test_narrows_the_scope_when_asked(self) -> None:
        tokens = sign_in_for_resource(
            self.agent(), self.resource, client_id=self.website["client_id"], client_secret=self.website["client_secret"], redirect_uri=REDIRECT_URI, scope="notes:read"
        )
        self.assertEqual(tokens["scope"], "notes:read")
        self.assertNotIn("email", _part(tokens["access_token"], 1))

    def test_an_unknown_resource_is_invalid_target(self) -> None:
        with self.assertRaises(AgentAuthError) as caught:
            sign_in_for_resource(
                self.agent(), "https://unknown.example.com/mcp", client_id=self.website["client_id"], client_secret=self.website["client_secret"], redirect_uri=REDIRECT_URI
            )
        self.assertEqual(caught.exception.code, "invalid_target")

    def test_a_wrong_secret_fails_at_the_token_endpoint(self) -> None:
        with self.assertRaises(AgentAuthError) as caught:
            sign_in_for_resource(self.agent(), self.resource, client_id=self.website["client_id"], client_secret="wrong", redirect_uri=REDIRECT_URI)
        self.assertEqual((caught.exception.code, caught.exception.status), ("invalid_client", 401))


if __name__ == "__main__":
    unittest.main()
