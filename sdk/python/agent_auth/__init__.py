"""agent-auth's agent SDK for Python: what an AI agent needs to sign in to a website through
agent-auth. Standard library only; works with any browser library whose page has ``url`` and
``evaluate`` or ``content`` (Playwright for Python, browser-use)."""

from ._flow import MAX_WAIT_SECONDS, __version__, parse_retry_after, poll_delay
from .aio import AsyncAgentAuthClient
from .client import AgentAuthClient
from .errors import (
    AccessDeniedError,
    OwnerDeniedError,
    AgentAuthError,
    AgentAuthTimeoutError,
    InvalidCredentialsError,
    InvalidRequestError,
    PossibleHijackError,
    RateLimitedError,
    RequestAlreadyAuthenticatedError,
    RequestExpiredError,
    RequestNotFoundError,
    WrongWebsiteError,
)
from .keys import AgentKey, RequestSigningKey
from .page import READ_IN_PAGE, find_request_id
from .resources import DEFAULT_REDIRECT_URI, agent_client_metadata_url, sign_in_for_resource

__all__ = [
    "DEFAULT_REDIRECT_URI",
    "MAX_WAIT_SECONDS",
    "READ_IN_PAGE",
    "AccessDeniedError",
    "OwnerDeniedError",
    "AgentAuthClient",
    "AgentAuthError",
    "AgentAuthTimeoutError",
    "AgentKey",
    "AsyncAgentAuthClient",
    "InvalidCredentialsError",
    "InvalidRequestError",
    "PossibleHijackError",
    "RateLimitedError",
    "RequestSigningKey",
    "RequestAlreadyAuthenticatedError",
    "RequestExpiredError",
    "RequestNotFoundError",
    "WrongWebsiteError",
    "__version__",
    "agent_client_metadata_url",
    "find_request_id",
    "parse_retry_after",
    "poll_delay",
    "sign_in_for_resource",
]
