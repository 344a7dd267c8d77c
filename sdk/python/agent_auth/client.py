"""The agent's side of a sign-in, for synchronous code."""

from __future__ import annotations

import time
import urllib.request
from typing import Any, Optional

from ._flow import (
    OWNER_APPROVAL_TIMEOUT,
    Done,
    advance,
    Credentials,
    Flow,
    Http,
    JsonObject,
    PageCall,
    Sleep,
    Step,
    Transport,
    authenticate_flow,
    check_status_step,
    normalize_base_url,
    read_request_id_flow,
    sign_in_flow,
    wait_flow,
)
from .keys import AgentKey
from .page import find_request_id, origin_of


class _ClientBase:
    def __init__(
        self,
        base_url: str,
        agent_id: str,
        agent_secret: Optional[str] = None,
        model: Optional[str] = None,
        *,
        private_key: Any = None,
        key_id: Optional[str] = None,
        request_timeout: float = 30.0,
        opener: Optional[urllib.request.OpenerDirector] = None,
    ) -> None:
        """``base_url``: agent-auth's issuer URL. ``model``: the model this agent runs on; the server
        records it with the sign-in and hands it to the website. ``opener``: a urllib opener for
        proxies, TLS settings or extra handlers.

        The agent proves who it is with ``agent_secret``, or with ``private_key`` (PEM, or a
        ``cryptography`` Ed25519 or P-256 key; needs ``pip install "agent-auth[keys]"``), which signs a
        fresh assertion for every call and never leaves the process; ``key_id`` is the key's id at the
        server when it was registered under another than its RFC 7638 thumbprint."""
        if (agent_secret is None) == (private_key is None):
            raise ValueError("give exactly one of agent_secret and private_key")
        if model is None:
            raise ValueError("model is required: the name of the model this agent runs on")
        self.base_url = normalize_base_url(base_url)
        key = AgentKey(private_key, key_id) if private_key is not None else None
        self._credentials = Credentials(agent_id, agent_secret, model, key, self.base_url)
        self._transport = Transport(self.base_url, opener)
        self._request_timeout = request_timeout

    @property
    def agent_id(self) -> str:
        return self._credentials.agent_id

    @staticmethod
    def find_request_id(html: str) -> Optional[str]:
        """The request id in an authorization page's HTML (meta tag, else ``window.authRequest``)."""
        return find_request_id(html)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, agent_id={self.agent_id!r})"


class AgentAuthClient(_ClientBase):
    """Authenticates this agent on the back channel and watches its sign-ins.

    >>> client = AgentAuthClient("https://auth.example", "agent_…", secret, "gpt-5")
    >>> client.sign_in(page, expected_website="https://shop.example")
    """

    def authenticate(self, request_id: str, expected_website: Optional[str] = None) -> JsonObject:
        """Proves this agent's identity for one authorization request. Returns the server's body:
        ``status``, ``request_id`` and the website it is for (``client_id``, ``client_name``,
        ``redirect_origin``). With ``expected_website`` (an origin such as ``https://shop.example``)
        a sign-in for another website is refused, unauthenticated, with WrongWebsiteError."""
        return self._run(authenticate_flow(self._credentials, request_id, expected_website, self._request_timeout))

    def check_status(self, request_id: str, wait: Optional[float] = None, last_status: Optional[str] = None) -> JsonObject:
        """The request's state; a ``status: "error"`` body is returned, not raised. ``wait`` (seconds,
        at most 25) holds the answer until the status differs from ``last_status``: a long poll."""
        return self._run(iter_one(check_status_step(request_id, wait, last_status, self._request_timeout)))

    def wait_for_completion(
        self,
        request_id: str,
        timeout: float = 60.0,
        interval: float = 1.0,
        backoff: bool = False,
        *,
        max_interval: float = 30.0,
        until: str = "completed",
        long_poll: bool = True,
        approval_timeout: float = OWNER_APPROVAL_TIMEOUT,
    ) -> JsonObject:
        """Waits until the request is ``completed`` (the browser has the code) or, with
        ``until="authenticated"``, until the agent is authenticated; returns the final status body.

        Long-polls the server (``wait``/``last_status``), polling every ``interval`` seconds where it
        answers at once (doubling up to ``max_interval`` with ``backoff``). Rate limits (honouring
        Retry-After), 5xx answers and network failures only delay the next poll. Raises the request's
        own error (RequestExpiredError, AccessDeniedError, …) or AgentAuthTimeoutError. While the
        owner's approval is pending, waits at least ``approval_timeout`` seconds from then (a person
        must act) and ``authenticated`` counts only once approved; the owner's denial raises
        OwnerDeniedError, an AccessDeniedError."""
        return self._run(wait_flow(request_id, timeout, interval, backoff, max_interval, until, long_poll, approval_timeout))

    def read_request_id(self, page: Any, timeout: float = 30.0, interval: float = 0.25) -> str:
        """Waits until ``page`` shows this server's authorization page and returns its request id."""
        return self._run(read_request_id_flow(page, origin_of(self.base_url), timeout, interval), page)

    def sign_in(
        self,
        page: Any,
        expected_website: Optional[str] = None,
        *,
        timeout: float = 60.0,
        page_timeout: float = 30.0,
        interval: float = 1.0,
        backoff: bool = False,
        until: str = "completed",
        approval_timeout: float = OWNER_APPROVAL_TIMEOUT,
    ) -> JsonObject:
        """The whole sign-in for a browser this agent drives (a Playwright-for-Python-like ``page``
        with ``url`` and ``evaluate`` or ``content``): reads the request id from the authorization
        page, only on this server's origin; authenticates; checks the sign-in is for
        ``expected_website`` (an origin such as ``https://shop.example``) when given; waits for the
        browser to receive the code, through the owner's approval when it is asked (at least
        ``approval_timeout`` seconds from then; a denial raises OwnerDeniedError). Returns the
        authenticate body merged with the final status."""
        flow = sign_in_flow(
            self._credentials, self.base_url, page, expected_website, timeout, page_timeout, interval, backoff, until, self._request_timeout, approval_timeout
        )
        return self._run(flow, page)

    def _run(self, flow: Flow, page: Any = None) -> Any:
        step = advance(flow)
        while not isinstance(step, Done):
            try:
                outcome = self._perform(step, page)
            except Exception as err:
                step = advance(flow, failure=err)
            else:
                step = advance(flow, outcome)
        return step.value

    def _perform(self, step: Step, page: Any) -> Any:
        if isinstance(step, Http):
            return self._transport.send(step)
        if isinstance(step, Sleep):
            time.sleep(step.seconds)
            return None
        assert isinstance(step, PageCall)
        member = getattr(page, step.name, None)
        return member(*step.args) if callable(member) else member


def iter_one(step: Http) -> Flow:
    """A flow of a single call, returning its answer."""
    return (yield step)
