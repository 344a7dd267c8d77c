"""Tokens for a resource (an MCP server or another API protected by agent-auth), with no browser:
the agent is its own browser. It opens the authorization URL (code flow with PKCE, RFC 7636, and
the ``resource`` of RFC 8707), keeps the binding cookie, authenticates, waits through its owner's
approval where asked, loads /authorize/complete as the page would, and redeems the code."""

from __future__ import annotations

import base64
import hashlib
import http.client
import http.cookiejar
import json
import secrets
import urllib.error
import urllib.request
from typing import Any, Dict, Optional, Tuple
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from ._flow import OWNER_APPROVAL_TIMEOUT, JsonObject
from .client import AgentAuthClient
from .errors import AgentAuthError, error_from_body

#: Where the code is sent: never loaded, the agent reads it off the redirect. A loopback URI, which
#: matches a registered loopback URI on any port (RFC 8252 section 7.3).
DEFAULT_REDIRECT_URI = "http://127.0.0.1/callback"

_CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class _Page:
    """The authorization page as ``sign_in`` reads a page: its URL and its HTML."""

    def __init__(self, url: str, html: str) -> None:
        self.url = url
        self._html = html

    def content(self) -> str:
        return self._html


def agent_client_metadata_url(agent: AgentAuthClient) -> str:
    """The agent's own Client ID Metadata Document at agent-auth: its ``client_id`` as an OAuth client."""
    return f"{agent.base_url}/agents/{quote(agent.agent_id, safe='')}/client-metadata.json"


def _open(opener: urllib.request.OpenerDirector, request: Any, timeout: float) -> Tuple[int, http.client.HTTPMessage, bytes]:
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as answer:  # 3xx (not followed) and errors alike
        with answer:
            return answer.code, answer.headers, answer.read()
    except (OSError, http.client.HTTPException) as failed:
        raise AgentAuthError("network_error", f"{urlsplit(getattr(request, 'full_url', request)).path} failed: {failed}") from failed


def _authorization_response(location: str, state: str, issuer: str) -> str:
    """The code of a redirect, once its ``state`` and RFC 9207 ``iss`` are the expected ones."""
    params = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    if params.get("iss", issuer) != issuer:
        raise AgentAuthError("invalid_request", f"the authorization response is from {params['iss']}, not {issuer}")
    if params.get("state") != state:
        raise AgentAuthError("invalid_request", "the authorization response carries another state")
    if "error" in params:
        raise error_from_body(params)
    if not params.get("code"):
        raise AgentAuthError("invalid_request", "the authorization response carries no code")
    return params["code"]


def sign_in_for_resource(
    agent: AgentAuthClient,
    resource: str,
    *,
    client_id: Optional[str] = None,
    client_secret: Optional[str] = None,
    redirect_uri: str = DEFAULT_REDIRECT_URI,
    scope: Optional[str] = None,
    timeout: float = 60.0,
    approval_timeout: float = OWNER_APPROVAL_TIMEOUT,
    request_timeout: float = 30.0,
) -> JsonObject:
    """Signs ``agent`` in for ``resource`` (its identifier, e.g. ``https://mcp.example.com/mcp``) and
    returns the token response: ``access_token`` (a JWT whose ``aud`` is the resource), ``refresh_token``,
    ``expires_in``, ``scope``.

    The OAuth client is the agent's own client-metadata document unless ``client_id`` names another
    (a registered client, with ``client_secret`` when it is confidential, and its ``redirect_uri``).
    An agent that signs with a key authenticates its own document by ``private_key_jwt``; otherwise
    that client is public. Raises the sign-in's errors (OwnerDeniedError, AgentAuthTimeoutError, …),
    or AgentAuthError with the server's code (``invalid_target`` for an unknown resource)."""
    own_document = client_id is None
    client = agent_client_metadata_url(agent) if own_document else client_id
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode("ascii")
    state = secrets.token_urlsafe(16)
    query = {
        "client_id": client,
        "redirect_uri": redirect_uri,
        "response_type": "code",
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": resource,
        **({"scope": scope} if scope else {}),
    }
    page_url = f"{agent.base_url}/authorize?{urlencode(query)}"
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), _NoRedirects())

    status, headers, body = _open(browser, page_url, request_timeout)
    if 300 <= status < 400:  # /authorize refuses some requests with an error redirect
        _authorization_response(headers.get("Location", ""), state, agent.base_url)
    if status != 200:
        code = body.decode("utf-8", "replace").split('id="error-code">', 1)[-1].split("<", 1)[0] if b'id="error-code"' in body else "server_error"
        raise AgentAuthError(code, f"the authorization page answered {status}", status)
    signed_in = agent.sign_in(
        _Page(page_url, body.decode("utf-8", "replace")), until="authenticated", page_timeout=0, timeout=timeout, approval_timeout=approval_timeout
    )
    complete = f"{agent.base_url}/authorize/complete?request_id={quote(signed_in['request_id'], safe='')}"
    status, headers, _ = _open(browser, complete, request_timeout)
    if not 300 <= status < 400 or not headers.get("Location"):
        raise AgentAuthError("server_error", f"/authorize/complete answered {status}, not a redirect", status)
    code = _authorization_response(headers["Location"], state, agent.base_url)

    form: Dict[str, str] = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
        "resource": resource,
        "client_id": client,
    }
    key = agent._credentials.key
    if client_secret is not None:
        form["client_secret"] = client_secret
    elif own_document and key is not None:
        form["client_assertion_type"] = _CLIENT_ASSERTION_TYPE
        form["client_assertion"] = key.client_assertion(client, agent.base_url)
    request = urllib.request.Request(f"{agent.base_url}/token", data=urlencode(form).encode(), method="POST", headers={"Accept": "application/json"})
    status, _, raw = _open(urllib.request.build_opener(), request, request_timeout)
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if status == 200 and isinstance(answer, dict):
        return answer
    if isinstance(answer, dict) and isinstance(answer.get("error"), str):
        raise error_from_body(answer, status)
    raise AgentAuthError("server_error", f"unexpected {status} response from /token", status)
