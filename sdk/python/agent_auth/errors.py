"""What the agent sees when a sign-in fails: one typed error per code of the server's
``{error, error_description}`` body (or of check-status's ``status: "error"`` body), so agents can
``except RequestExpiredError:`` instead of comparing strings."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type


class AgentAuthError(Exception):
    """A failed call. ``code`` is the server's ``error`` (or ``timeout``, ``network_error``,
    ``server_error`` for failures on this side), ``description`` its ``error_description``,
    ``status`` the HTTP status (None when no response was involved)."""

    def __init__(self, code: str, description: str, status: Optional[int] = None) -> None:
        super().__init__(f"{code}: {description}")
        self.code = code
        self.description = description
        self.status = status


class InvalidRequestError(AgentAuthError):
    """A field was missing or malformed (400 ``invalid_request``)."""


class InvalidCredentialsError(AgentAuthError):
    """Unknown or inactive agent, or wrong secret (401 ``invalid_credentials``)."""


class RequestNotFoundError(AgentAuthError):
    """No such authorization request (404 ``not_found``)."""


class RequestExpiredError(AgentAuthError):
    """The authorization request is older than its lifetime (``request_expired``)."""


class RequestAlreadyAuthenticatedError(AgentAuthError):
    """Another agent (or this one with another model) authenticated the request first (409)."""


class PossibleHijackError(RequestAlreadyAuthenticatedError):
    """The request shown in this agent's own browser was authenticated by someone else first:
    whoever holds its id may be signing in as this browser's user. Not a retryable conflict: stop,
    and do not continue in that browser. ``__cause__`` is the server's 409."""

    def __init__(self, request_id: str, cause: RequestAlreadyAuthenticatedError) -> None:
        super().__init__(
            cause.code,
            f"another agent authenticated sign-in {request_id} on this agent's page first: possibly a hijack; do not continue it",
            cause.status,
        )
        self.request_id = request_id


class AccessDeniedError(AgentAuthError):
    """The person denied the sign-in, or an operator revoked it (``access_denied``)."""


class OwnerDeniedError(AccessDeniedError):
    """The agent's owner declined this sign-in (check-status says ``approval: "denied"``); an AccessDeniedError,
    so old handlers still catch it."""


class WrongWebsiteError(AgentAuthError):
    """The sign-in is for another website than the agent expected (403 ``redirect_origin_mismatch``);
    the server refused it without authenticating."""


class RateLimitedError(AgentAuthError):
    """Too many requests (429). ``retry_after``: seconds to wait, from ``Retry-After``
    (None when the server sent none)."""

    def __init__(self, code: str, description: str, status: int = 429, retry_after: Optional[float] = None) -> None:
        super().__init__(code, description, status)
        self.retry_after = retry_after


class AgentAuthTimeoutError(AgentAuthError):
    """The client gave up waiting; ``__cause__`` holds the last transient failure, if any."""

    def __init__(self, description: str) -> None:
        super().__init__("timeout", description)


_BY_CODE: Dict[str, Type[AgentAuthError]] = {
    "invalid_request": InvalidRequestError,
    "invalid_credentials": InvalidCredentialsError,
    "not_found": RequestNotFoundError,
    "request_expired": RequestExpiredError,
    "request_already_authenticated": RequestAlreadyAuthenticatedError,
    "access_denied": AccessDeniedError,
    "redirect_origin_mismatch": WrongWebsiteError,
}


def error_from_body(body: Mapping[str, Any], status: Optional[int] = None, retry_after: Optional[float] = None) -> AgentAuthError:
    """The error for one failure body; unknown codes keep the base class."""
    code = body.get("error")
    code = code if isinstance(code, str) else "server_error"
    description = body.get("error_description")
    description = description if isinstance(description, str) else f"request failed ({code})"
    if status == 429 or code == "rate_limited":
        return RateLimitedError(code, description, status or 429, retry_after)
    # check-status says which access_denied is the owner's: approval "denied".
    if code == "access_denied" and body.get("approval") == "denied":
        return OwnerDeniedError(code, description, status)
    return _BY_CODE.get(code, AgentAuthError)(code, description, status)
