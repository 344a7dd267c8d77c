"""Signs an agent in to a website with no browser at all: urllib plays the browser (cookies,
redirects) and agent_auth the agent. Useful for scripts and for checking a website's integration.

    PYTHONPATH=sdk/python python3 examples/python/sign_in_urllib.py

Environment: AGENT_AUTH_URL (agent-auth's issuer), AGENT_ID, AGENT_SECRET, AGENT_MODEL (default
"example-model"), START_URL (the website's "Sign in with agent" link, e.g. https://shop.example/login).
Prints the address the browser lands on and the text of that page.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import sys
import urllib.request
from html import unescape
from urllib.parse import quote

from agent_auth import AgentAuthClient, AgentAuthError


class FetchedPage:
    """A page as sign_in reads it (``url`` and ``content()``), from a plain HTTP answer."""

    def __init__(self, url: str, html: str) -> None:
        self.url = url
        self._html = html

    def content(self) -> str:
        return self._html


def page_text(html: str) -> str:
    body = re.sub(r"(?s)<(script|style|head)\b.*?</\1>", " ", html)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", body)).split())


def main() -> int:
    env = os.environ
    client = AgentAuthClient(env["AGENT_AUTH_URL"], env["AGENT_ID"], env["AGENT_SECRET"], env.get("AGENT_MODEL", "example-model"))
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    start_url = env["START_URL"]

    # The website sends the browser to agent-auth's authorization page.
    with browser.open(start_url, timeout=30) as response:
        page = FetchedPage(response.geturl(), response.read().decode())
    try:
        # Refuses a sign-in meant for another website than the one this script started from.
        result = client.sign_in(page, expected_website=start_url, until="authenticated")
    except AgentAuthError as err:
        print(f"sign-in failed: {err}", file=sys.stderr)
        return 1
    print(f"authenticated for {result['client_name']} ({result['redirect_origin']})")

    # What the page's script does next in a real browser: on to the website, with the code.
    with browser.open(f"{client.base_url}/authorize/complete?request_id={quote(result['request_id'])}", timeout=30) as response:
        print(f"landed on {response.geturl()}")
        print(page_text(response.read().decode()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
