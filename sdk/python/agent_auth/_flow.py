"""The SDK's logic, written once for the sync and the async client: each flow is a generator that
yields what it needs done (an HTTP call, a pause, a call on the browser page) and receives the
outcome, or has the failure thrown into it. The clients only perform the steps."""

from __future__ import annotations

import email.utils
import http.client
import json
import math
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, Generator, Optional, Tuple, Union
from urllib.parse import urlencode, urlsplit

from .errors import (
    AgentAuthError,
    AgentAuthTimeoutError,
    PossibleHijackError,
    RateLimitedError,
    RequestAlreadyAuthenticatedError,
    WrongWebsiteError,
    error_from_body,
)
from .page import READ_IN_PAGE, find_request_id, origin_of

__version__ = "0.1.0"

#: The longest long poll the server grants (check-status ``wait``).
MAX_WAIT_SECONDS = 25

JsonObject = Dict[str, Any]


@dataclass(frozen=True)
class Http:
    method: str
    path: str
    body: Optional[JsonObject] = None
    timeout: float = 30.0


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class PageCall:
    """Reads ``page.<name>``: called with ``args`` when it is a method, awaited when that returns a coroutine."""

    name: str
    args: Tuple[Any, ...] = field(default_factory=tuple)


Step = Union[Http, Sleep, PageCall]
Flow = Generator[Step, Any, Any]


@dataclass(frozen=True)
class Done:
    value: Any


def advance(flow: Flow, outcome: Any = None, failure: Optional[BaseException] = None) -> Union[Step, Done]:
    """Hands the last step's outcome (or failure) to the flow; returns its next step, or Done."""
    try:
        return flow.throw(failure) if failure is not None else flow.send(outcome)
    except StopIteration as finished:
        return Done(finished.value)


def poll_delay(attempt: int, interval: float = 1.0, backoff: bool = False, max_interval: float = 30.0) -> float:
    """The pause before poll number ``attempt + 1``: fixed, or doubling up to ``max_interval`` with ``backoff``."""
    return min(interval * 2**attempt, max_interval) if backoff else interval


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """``Retry-After`` in seconds, from either of its forms (delta-seconds or an HTTP date)."""
    text = (value or "").strip()
    if not text:
        return None
    if text.isdigit():
        return float(text)
    try:
        at = email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError):
        return None
    return float(max(0, math.ceil(at - (time.time() if now is None else now))))


def _is_transient(err: AgentAuthError) -> bool:
    """Failures worth another poll: rate limits, server trouble, the network."""
    if isinstance(err, RateLimitedError):
        return True
    return err.code == "network_error" if err.status is None else err.status >= 500


class Transport:
    """JSON over urllib. ``opener`` lets callers add proxies, TLS settings or their own handlers."""

    def __init__(self, base_url: str, opener: Optional[urllib.request.OpenerDirector] = None) -> None:
        self.base_url = base_url
        self.opener = opener or urllib.request.build_opener()

    def send(self, step: Http) -> JsonObject:
        data = None if step.body is None else json.dumps(step.body).encode()
        headers = {"Accept": "application/json", "User-Agent": f"agent-auth-python/{__version__}"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.base_url + step.path, data=data, headers=headers, method=step.method)
        try:
            with self.opener.open(request, timeout=step.timeout) as response:
                status, retry_after, raw = response.status, None, response.read()
        except urllib.error.HTTPError as failed:
            status, retry_after = failed.code, failed.headers.get("Retry-After")
            try:
                raw = failed.read()
            except (OSError, http.client.HTTPException):
                raw = b""
            finally:
                failed.close()
        except (OSError, http.client.HTTPException) as failed:  # URLError, timeouts, resets
            raise AgentAuthError("network_error", f"{step.method} {step.path.split('?')[0]} failed: {failed}") from failed
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if 200 <= status < 300 and isinstance(body, dict):
            return body
        if isinstance(body, dict) and isinstance(body.get("error"), str):
            raise error_from_body(body, status, parse_retry_after(retry_after))
        raise AgentAuthError("server_error", f"unexpected {status} response from {step.path.split('?')[0]}", status)


@dataclass(frozen=True)
class Credentials:
    agent_id: str
    agent_secret: Optional[str] = field(repr=False)
    model: str
    #: In place of the secret: the key that signs an assertion for each call (keys.AgentKey).
    key: Optional[Any] = field(repr=False, default=None)
    #: The issuer, which assertions name as their audience.
    issuer: str = ""

    def proof(self, request_id: str) -> JsonObject:
        """What proves the agent's identity in one authenticate call."""
        if self.key is not None:
            return {"agent_assertion": self.key.assertion(self.agent_id, self.issuer, request_id)}
        return {"agent_secret": self.agent_secret}


def normalize_base_url(base_url: str) -> str:
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base_url must be an http(s) URL, not {base_url!r}")
    return base_url.rstrip("/")


def website_origin(website: str) -> str:
    """The origin of a website given as an origin, a URL or a bare host name (https assumed)."""
    return origin_of(website if "://" in website else f"https://{website}")


def authenticate_step(credentials: Credentials, request_id: str, expected_website: Optional[str], timeout: float) -> Http:
    body = {
        "request_id": request_id,
        "agent_id": credentials.agent_id,
        **credentials.proof(request_id),
        "model": credentials.model,
    }
    if expected_website is not None:
        # The server refuses another website's sign-in before authenticating it.
        body["expected_redirect_origin"] = website_origin(expected_website)
    return Http("POST", "/api/agent/authenticate", body, timeout)


def authenticate_flow(credentials: Credentials, request_id: str, expected_website: Optional[str], timeout: float) -> Flow:
    authenticated = yield authenticate_step(credentials, request_id, expected_website, timeout)
    if expected_website is not None:
        check_website(authenticated, expected_website)
    return authenticated


#: Default longest wait, in seconds, once the owner's approval is pending: a person must notice and act.
OWNER_APPROVAL_TIMEOUT = 300.0


def check_status_step(
    request_id: str, wait: Optional[float], last_status: Optional[str], timeout: float, last_approval: Optional[str] = None
) -> Http:
    query = {"request_id": request_id}
    whole = min(int(wait or 0), MAX_WAIT_SECONDS)
    if whole > 0:
        query["wait"] = str(whole)
        if last_status:
            query["last_status"] = last_status
        if last_approval:
            query["last_approval"] = last_approval
    # A long poll is held by the server: the socket must outlast it.
    return Http("GET", f"/api/check-status?{urlencode(query)}", None, max(timeout, whole + 5.0))


def wait_flow(
    request_id: str,
    timeout: float,
    interval: float,
    backoff: bool,
    max_interval: float,
    until: str,
    long_poll: bool,
    approval_timeout: float = OWNER_APPROVAL_TIMEOUT,
) -> Flow:
    """Polls check-status until the request reaches ``until``; see AgentAuthClient.wait_for_completion.

    While the owner's approval is pending the wait lasts at least ``approval_timeout`` from then,
    ``authenticated`` counts only once approved, and a denial raises OwnerDeniedError."""
    if until not in ("completed", "authenticated"):
        raise ValueError("until must be 'completed' or 'authenticated'")
    deadline = time.monotonic() + timeout
    last_failure: Optional[AgentAuthError] = None
    last_status: Optional[str] = None
    last_approval: Optional[str] = None
    attempt = 0
    while True:
        delay = poll_delay(attempt, interval, backoff, max_interval)
        started = time.monotonic()
        try:
            # Long polls only once a status has been seen: the server holds the answer while it lasts.
            wait = math.floor(deadline - started) if long_poll and last_status else 0
            state = yield check_status_step(request_id, wait, last_status, max(deadline - started, 1.0), last_approval)
            # Time the server held the poll counts towards the interval: after a long poll, ask again at once.
            delay = max(0.0, delay - (time.monotonic() - started))
            if state.get("status") == "error":
                # An owner's denial is told by the answer itself (approval "denied"): OwnerDeniedError.
                raise error_from_body(state, 200)
            last_status = state.get("status")
            approval = state.get("approval")
            if approval == "pending" and last_approval != "pending":
                deadline = max(deadline, time.monotonic() + approval_timeout)
            last_approval = approval or last_approval
            if last_status == "completed" or (until == "authenticated" and last_status == "authenticated" and approval != "pending"):
                return state
            last_failure = None
        except AgentAuthError as err:
            if not _is_transient(err):
                raise
            last_failure = err
            if isinstance(err, RateLimitedError) and err.retry_after is not None:
                delay = max(delay, err.retry_after)
        remaining = deadline - time.monotonic()
        # Never poll earlier than Retry-After allows: if that is past the deadline, stop now.
        if remaining <= 0 or (isinstance(last_failure, RateLimitedError) and delay > remaining):
            raise AgentAuthTimeoutError(f"request {request_id} did not become {until} in time") from last_failure
        yield Sleep(min(delay, remaining))
        attempt += 1


def read_request_id_flow(page: Any, expected_origin: Optional[str], timeout: float, interval: float) -> Flow:
    """Waits until the browser shows the authorization page and returns its request id. Retries while
    the page is still on its way there (another origin, no id yet, or a navigation in progress)."""
    use_evaluate = callable(getattr(page, "evaluate", None))
    if not use_evaluate and not callable(getattr(page, "content", None)):
        raise TypeError("the page object needs an evaluate(expression) or a content() method")
    deadline = time.monotonic() + timeout
    last_error: Optional[BaseException] = None
    while True:
        try:
            url = yield PageCall("url")  # a property in Playwright for Python, a (coroutine) method elsewhere
            # Only a page of agent-auth's own origin: a look-alike page must not make the agent approve
            # someone else's request.
            if expected_origin is None or not isinstance(url, str) or origin_of(url) == expected_origin:
                if use_evaluate:
                    found = yield PageCall("evaluate", (READ_IN_PAGE,))
                else:
                    html = yield PageCall("content")
                    found = find_request_id(html) if isinstance(html, str) else None
                if isinstance(found, str) and found:
                    return found
        except Exception as err:  # typically a navigation that destroyed the page's context mid-read
            last_error = err
        if time.monotonic() >= deadline:
            where = f" of {expected_origin}" if expected_origin else ""
            raise AgentAuthTimeoutError(f"no authorization page{where} with a request id appeared within {timeout:g} s") from last_error
        yield Sleep(interval)


def check_website(authenticated: JsonObject, expected_website: str) -> None:
    """Checks the answer too, in case the server predates ``expected_redirect_origin`` (and ignored it)."""
    actual = authenticated.get("redirect_origin")
    expected = website_origin(expected_website)
    if not isinstance(actual, str) or origin_of(actual) != expected:
        raise WrongWebsiteError("redirect_origin_mismatch", f"this sign-in is for {actual or 'a website the server did not name'}, not {expected}")


def sign_in_flow(
    credentials: Credentials,
    base_url: str,
    page: Any,
    expected_website: Optional[str],
    timeout: float,
    page_timeout: float,
    interval: float,
    backoff: bool,
    until: str,
    request_timeout: float,
    approval_timeout: float = OWNER_APPROVAL_TIMEOUT,
) -> Flow:
    """The whole sign-in for a browser the agent drives; see AgentAuthClient.sign_in."""
    request_id = yield from read_request_id_flow(page, origin_of(base_url), page_timeout, 0.25)
    deadline = time.monotonic() + timeout
    while True:
        try:
            authenticated = yield from authenticate_flow(credentials, request_id, expected_website, request_timeout)
            break
        except RateLimitedError as err:
            if err.retry_after is None or time.monotonic() + err.retry_after > deadline:
                raise
            yield Sleep(err.retry_after)
        except RequestAlreadyAuthenticatedError as err:
            # This agent's own repeat is answered 200: a 409 on its own page means someone else came first.
            raise PossibleHijackError(request_id, err) from err
    state = yield from wait_flow(request_id, max(deadline - time.monotonic(), 0.0), interval, backoff, 30.0, until, True, approval_timeout)
    return {**authenticated, **state, "request_id": request_id}
