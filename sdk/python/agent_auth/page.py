"""Finding the request id on agent-auth's authorization page."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any, Optional
from urllib.parse import urlsplit

# Run in the browser by ``page.evaluate``: the live DOM, also once scripts have run.
READ_IN_PAGE = """(() => {
  const fromScript = window.authRequest && window.authRequest.request_id;
  if (typeof fromScript === 'string' && fromScript) return fromScript;
  const meta = document.querySelector('meta[name="request-id"]');
  return (meta && meta.getAttribute('content')) || null;
})()"""

# `window.authRequest = { request_id: "…" }`: key quoted or not, value in single or double quotes.
_SCRIPT_LITERAL = re.compile(
    r"""window\.authRequest\s*=\s*\{[^}]*?["']?\brequest_id["']?\s*:\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')""",
    re.DOTALL,
)


class _MetaFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.request_id: Optional[str] = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "meta" and self.request_id is None:
            values = {name.lower(): value for name, value in attrs}
            if values.get("name") == "request-id" and values.get("content"):
                self.request_id = values["content"]

    handle_startendtag = handle_starttag


def _js_string(double_quoted: Optional[str], single_quoted: Optional[str]) -> Optional[str]:
    """The value of a JavaScript string literal's body (its escapes are JSON's, plus \\')."""
    body = double_quoted if double_quoted is not None else re.sub(r"(?<!\\)((?:\\\\)*)\\'", r"\1'", single_quoted or "").replace('"', '\\"')
    try:
        value = json.loads(f'"{body}"')
    except ValueError:
        return None
    return value if isinstance(value, str) and value else None


def find_request_id(html: str) -> Optional[str]:
    """The request id on an authorization page: its ``request-id`` meta tag, else ``window.authRequest``."""
    finder = _MetaFinder()
    finder.feed(html)
    finder.close()
    if finder.request_id:
        return finder.request_id
    match = _SCRIPT_LITERAL.search(html)
    return _js_string(match.group(1), match.group(2)) if match else None


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, lower case, host in IDNA form, without the scheme's default port."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if not host.isascii():
        # The server names websites by their punycode (IDNA) host, as browsers and URL parsers do.
        host = host.encode("idna").decode("ascii")
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    default = {"http": 80, "https": 443}.get(scheme)
    return f"{scheme}://{host}" if port is None or port == default else f"{scheme}://{host}:{port}"
