"""EXAMPLE ONLY, not run by the test suite: browser-use cannot be installed where agent-auth is built
(no access to PyPI), so this file is checked for syntax only. It shows how a browser-use agent gets a
"Sign in with agent" action; the SDK calls it makes are the ones sdk/python/tests exercise.

    pip install browser-use ./sdk/python
    AGENT_AUTH_URL=https://auth.example AGENT_ID=agent_… AGENT_SECRET=… OPENAI_API_KEY=… python browser_use_agent.py

Written against browser-use's Tools API (0.7 and later); older releases call it Controller, with
``@controller.action`` and a Playwright page from ``browser.get_current_page()``, which sign_in takes
as it is.
"""

from __future__ import annotations

import asyncio
import os

from browser_use import ActionResult, Agent, BrowserSession, ChatOpenAI, Tools

from agent_auth import AgentAuthError, AsyncAgentAuthClient

MODEL = "gpt-4.1-mini"

auth = AsyncAgentAuthClient(os.environ["AGENT_AUTH_URL"], os.environ["AGENT_ID"], os.environ["AGENT_SECRET"], model=MODEL)
tools = Tools()


class BrowserUsePage:
    """What sign_in reads (``url``, ``evaluate``) over browser-use's own page API."""

    def __init__(self, session: BrowserSession) -> None:
        self._session = session

    async def url(self) -> str:
        return await self._session.get_current_page_url()

    async def evaluate(self, expression: str) -> object:
        page = await self._session.get_current_page()
        # browser-use evaluates arrow functions only.
        return await page.evaluate(f"() => {expression}")


@tools.action(
    "Sign in with agent: use this when a website's login page offers 'Sign in with agent' and the browser "
    "is on the agent-auth authorization page (after clicking that button). Pass the website's address."
)
async def sign_in_with_agent(website: str, browser_session: BrowserSession) -> ActionResult:
    try:
        # Reads the request id only from agent-auth's own page, and refuses another website's sign-in.
        result = await auth.sign_in(BrowserUsePage(browser_session), expected_website=website)
    except AgentAuthError as err:
        return ActionResult(error=f"Sign-in with agent failed ({err.code}): {err.description}")
    return ActionResult(extracted_content=f"Signed in to {result['client_name']} as agent {auth.agent_id}", include_in_memory=True)


async def main() -> None:
    agent = Agent(
        task="Go to https://shop.example, sign in with the 'Sign in with agent' button, and tell me the name on the account.",
        llm=ChatOpenAI(model=MODEL),
        tools=tools,
    )
    await agent.run()


if __name__ == "__main__":
    asyncio.run(main())
