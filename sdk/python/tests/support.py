"""What the tests need around a real agent-auth server: its addresses (from the test runner,
test/sdk-python.test.ts), registration through the admin API, and a browser made of urllib."""

from __future__ import annotations

import base64
import hashlib
import http.cookiejar
import json
import os
import secrets
import threading
import unittest
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlencode, urlsplit

# Where the callback "lands": nothing listens there, the browser stops at the 302.
REDIRECT_URI = "http://127.0.0.1:9/callback"


def servers() -> Dict[str, Any]:
    """The servers test/sdk-python.test.ts started: main, limited (tiny rate limits), short (1 s requests)."""
    raw = os.environ.get("AGENT_AUTH_TEST_SERVERS")
    if not raw:
        raise unittest.SkipTest("run through `npx vitest run test/sdk-python.test.ts`, which starts the servers")
    return json.loads(raw)


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _json(method: str, url: str, body: Optional[Dict[str, Any]] = None, headers: Optional[Dict[str, str]] = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    kind = {} if body is None else {"content-type": "application/json"}
    request = urllib.request.Request(url, data=data, method=method, headers={**kind, **(headers or {})})
    with urllib.request.urlopen(request, timeout=30) as response:
        raw = response.read()
        return json.loads(raw) if raw else None


class Server:
    def __init__(self, name: str) -> None:
        all_servers = servers()
        self.url: str = all_servers[name]["url"]
        self.admin_url: str = all_servers[name]["admin_url"]
        self._admin_token: str = all_servers["admin_token"]

    def admin(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
        return _json(method, self.admin_url + path, body, {"authorization": f"Bearer {self._admin_token}"})

    def create_client(self, redirect_uris: Optional[List[str]] = None) -> Dict[str, Any]:
        return self.admin("POST", "/admin/clients", {"name": "Python shop", "redirect_uris": redirect_uris or [REDIRECT_URI]})

    def create_agent(self) -> Dict[str, Any]:
        return self.admin("POST", "/admin/agents", {"email": f"py-{secrets.token_hex(4)}@example.com", "name": "Python agent"})

    def token(self, client: Dict[str, Any], code: str, verifier: str) -> Dict[str, Any]:
        form = urlencode(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": client["redirect_uris"][0],
                "code_verifier": verifier,
                "client_id": client["client_id"],
                "client_secret": client["client_secret"],
            }
        ).encode()
        request = urllib.request.Request(self.url + "/token", data=form, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def userinfo(self, access_token: str) -> Dict[str, Any]:
        return _json("GET", self.url + "/userinfo", headers={"authorization": f"Bearer {access_token}"})


class Browser:
    """The person's browser, made of urllib: keeps cookies, stops at redirects."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), NoRedirects())
        self.verifier = secrets.token_urlsafe(32)
        self.state = secrets.token_urlsafe(16)

    def open_authorize(self, client: Dict[str, Any], **extra: str) -> "Page":
        challenge = base64.urlsafe_b64encode(hashlib.sha256(self.verifier.encode()).digest()).rstrip(b"=").decode()
        query = {
            "client_id": client["client_id"],
            "redirect_uri": client["redirect_uris"][0],
            "response_type": "code",
            "state": self.state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "scope": "openid email",
            **extra,
        }
        url = f"{self.server.url}/authorize?{urlencode(query)}"
        with self.opener.open(url, timeout=30) as response:
            return Page(response.geturl(), response.read().decode())

    def complete(self, request_id: str) -> Dict[str, str]:
        """What the page's script does once the agent is in: load /authorize/complete, land at the redirect."""
        try:
            self.opener.open(f"{self.server.url}/authorize/complete?request_id={request_id}", timeout=30)
        except urllib.error.HTTPError as redirect:
            location = redirect.headers["Location"]
            if redirect.code != 302 or not location:
                raise
            return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
        raise AssertionError("no redirect from /authorize/complete")

    def complete_once_authenticated(self, request_id: str) -> "threading.Thread":
        """In the background, as the page's script: wait (long poll) for the agent, then complete."""
        self.landed: Dict[str, str] = {}

        def run() -> None:
            status = "pending"
            while status == "pending":
                url = f"{self.server.url}/api/check-status?request_id={request_id}&wait=25&last_status=pending"
                with self.opener.open(url, timeout=30) as response:
                    status = json.loads(response.read())["status"]
            if status == "authenticated":
                self.landed = self.complete(request_id)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread


class Page:
    """A Playwright-for-Python-like page without JavaScript: ``url`` and ``content()``."""

    def __init__(self, url: str, html: str) -> None:
        self.url = url
        self.html = html

    def content(self) -> str:
        return self.html


class CountingHandler(urllib.request.BaseHandler):
    """Counts the answers a client's opener receives, by status."""

    def __init__(self) -> None:
        self.answers: List[Tuple[str, int]] = []

    def http_response(self, request: Any, response: Any) -> Any:
        self.answers.append((request.full_url, response.status))
        return response

    def statuses(self, path: str) -> List[int]:
        return [status for url, status in self.answers if urlsplit(url).path == path]

    https_response = http_response
