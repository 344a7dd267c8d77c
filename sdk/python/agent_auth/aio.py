"""The agent's side of a sign-in, for asyncio agents (standard library only: the HTTP calls run in
a worker thread)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Optional

from ._flow import (
    OWNER_APPROVAL_TIMEOUT,
    Done,
    Flow,
    Http,
    JsonObject,
    PageCall,
    Sleep,
    Step,
    advance,
    authenticate_flow,
    check_status_step,
    read_request_id_flow,
    sign_in_flow,
    wait_flow,
)
from .client import _ClientBase, iter_one
from .page import origin_of


class AsyncAgentAuthClient(_ClientBase):
    """AgentAuthClient's twin with coroutine methods; ``sign_in`` takes an async page (Playwright's
    async API, browser-use) or a sync one. Same arguments, results and errors."""

    async def authenticate(self, request_id: str, expected_website: Optional[str] = None) -> JsonObject:
        return await self._run(authenticate_flow(self._credentials, request_id, expected_website, self._request_timeout))

    async def check_status(self, request_id: str, wait: Optional[float] = None, last_status: Optional[str] = None) -> JsonObject:
        return await self._run(iter_one(check_status_step(request_id, wait, last_status, self._request_timeout)))

    async def wait_for_completion(
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
        return await self._run(wait_flow(request_id, timeout, interval, backoff, max_interval, until, long_poll, approval_timeout))

    async def read_request_id(self, page: Any, timeout: float = 30.0, interval: float = 0.25) -> str:
        return await self._run(read_request_id_flow(page, origin_of(self.base_url), timeout, interval), page)

    async def sign_in(
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
        flow = sign_in_flow(
            self._credentials, self.base_url, page, expected_website, timeout, page_timeout, interval, backoff, until, self._request_timeout, approval_timeout
        )
        return await self._run(flow, page)

    async def _run(self, flow: Flow, page: Any = None) -> Any:
        step = advance(flow)
        while not isinstance(step, Done):
            try:
                outcome = await self._perform(step, page)
            except Exception as err:
                step = advance(flow, failure=err)
            else:
                step = advance(flow, outcome)
        return step.value

    async def _perform(self, step: Step, page: Any) -> Any:
        if isinstance(step, Http):
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(None, self._transport.send, step)
        if isinstance(step, Sleep):
            await asyncio.sleep(step.seconds)
            return None
        assert isinstance(step, PageCall)
        member = getattr(page, step.name, None)
        result = member(*step.args) if callable(member) else member
        return await result if inspect.isawaitable(result) else result
