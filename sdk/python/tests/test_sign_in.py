"""The SDK against a real agent-auth server: whole sign-ins and every typed error."""

from __future__ import annotations

import asyncio
import re
import unittest
import urllib.request

from agent_auth import (
    AccessDeniedError,
    AgentAuthClient,
    AgentAuthTimeoutError,
    AsyncAgentAuthClient,
    InvalidCredentialsError,
    InvalidRequestError,
    PossibleHijackError,
    RequestAlreadyAuthenticatedError,
    RequestNotFoundError,
    WrongWebsiteError,
    find_request_id,
)

from .support import REDIRECT_URI, Browser, CountingHandler, Page, Server


class SignInTest(unittest.TestCase):
    server: Server

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server("main")
        cls.website = cls.server.create_client()

    def agent(self, model: str = "gpt-test", **kwargs) -> AgentAuthClient:
        created = self.server.create_agent()
        self.created = created
        return AgentAuthClient(self.server.url, created["agent_id"], created["agent_secret"], model, **kwargs)

    def test_signs_in_and_the_website_gets_a_code_for_this_agent(self) -> None:
        client = self.agent()
        browser = Browser(self.server)
        page = browser.open_authorize(self.website)
        browser_thread = browser.complete_once_authenticated(find_request_id(page.html) or "")

        result = client.sign_in(page, expected_website="http://127.0.0.1:9")

        browser_thread.join(30)
        self.assertEqual(result["status"], "completed")
        self.assertRegex(result["request_id"], r"^req_")
        self.assertEqual(result["client_id"], self.website["client_id"])
        self.assertEqual(result["redirect_origin"], "http://127.0.0.1:9")
        self.assertEqual(browser.landed["state"], browser.state)
        # The website redeems the code; the token's subject is this agent, with the email of its user.
        tokens = self.server.token(self.website, browser.landed["code"], browser.verifier)
        self.assertEqual(self.server.userinfo(tokens["access_token"]), {"sub": client.agent_id, "email": self.created["email"]})

    def test_authenticate_returns_the_website_and_check_status_follows_the_request(self) -> None:
        client = self.agent()
        browser = Browser(self.server)
        request_id = find_request_id(browser.open_authorize(self.website).html) or ""
        self.assertEqual(client.check_status(request_id), {"status": "pending"})
        body = client.authenticate(request_id)
        self.assertEqual(body["status"], "authenticated")
        self.assertEqual(body["request_id"], request_id)
        self.assertEqual(body["client_name"], "Python shop")
        # Idempotent for the same agent and model.
        self.assertEqual(client.authenticate(request_id)["status"], "authenticated")
        self.assertEqual(client.wait_for_completion(request_id, until="authenticated")["status"], "authenticated")
        browser.complete(request_id)
        self.assertEqual(client.wait_for_completion(request_id), {"status": "completed"})

    def test_the_pattern_of_agents_written_for_the_original_finds_the_same_id(self) -> None:
        html = Browser(self.server).open_authorize(self.website).html
        original = re.search(r"request_id:\s*['\"]([^'\"]+)['\"]", html)
        self.assertIsNotNone(original)
        self.assertEqual(original.group(1) if original else None, find_request_id(html))

    def test_wrong_secret_is_invalid_credentials(self) -> None:
        created = self.server.create_agent()
        client = AgentAuthClient(self.server.url, created["agent_id"], "not-the-secret", "gpt-test")
        request_id = find_request_id(Browser(self.server).open_authorize(self.website).html) or ""
        with self.assertRaises(InvalidCredentialsError) as caught:
            client.authenticate(request_id)
        self.assertEqual((caught.exception.code, caught.exception.status), ("invalid_credentials", 401))

    def test_unknown_request_is_not_found_for_authenticate_and_for_waiting(self) -> None:
        client = self.agent()
        with self.assertRaises(RequestNotFoundError) as caught:
            client.authenticate("req_does_not_exist")
        self.assertEqual(caught.exception.status, 404)
        with self.assertRaises(RequestNotFoundError):
            client.wait_for_completion("req_does_not_exist", timeout=5)

    def test_an_empty_model_is_an_invalid_request(self) -> None:
        client = self.agent(model="")
        request_id = find_request_id(Browser(self.server).open_authorize(self.website).html) or ""
        with self.assertRaises(InvalidRequestError) as caught:
            client.authenticate(request_id)
        self.assertEqual(caught.exception.status, 400)

    def test_a_request_another_agent_took_is_already_authenticated_and_in_its_own_browser_a_possible_hijack(self) -> None:
        page = Browser(self.server).open_authorize(self.website)
        request_id = find_request_id(page.html) or ""
        self.agent().authenticate(request_id)
        mine = self.agent()
        with self.assertRaises(RequestAlreadyAuthenticatedError) as caught:
            mine.authenticate(request_id)
        self.assertEqual(caught.exception.status, 409)
        self.assertNotIsInstance(caught.exception, PossibleHijackError)
        with self.assertRaises(PossibleHijackError) as hijack:
            mine.sign_in(page, timeout=5)
        self.assertIsInstance(hijack.exception, RequestAlreadyAuthenticatedError)
        self.assertEqual((hijack.exception.request_id, hijack.exception.status), (request_id, 409))

    def test_a_revoked_sign_in_is_access_denied(self) -> None:
        client = self.agent()
        request_id = find_request_id(Browser(self.server).open_authorize(self.website).html) or ""
        client.authenticate(request_id)
        self.server.admin("POST", f"/admin/agents/{client.agent_id}/revoke-grants")
        with self.assertRaises(AccessDeniedError):
            client.wait_for_completion(request_id, timeout=10)
        with self.assertRaises(AccessDeniedError) as caught:
            client.authenticate(request_id)
        self.assertEqual(caught.exception.status, 403)

    def test_a_sign_in_for_another_website_is_refused_before_it_is_authenticated(self) -> None:
        client = self.agent()
        page = Browser(self.server).open_authorize(self.website)
        with self.assertRaises(WrongWebsiteError) as caught:
            client.sign_in(page, expected_website="https://shop.example", timeout=5)
        self.assertEqual((caught.exception.code, caught.exception.status), ("redirect_origin_mismatch", 403))
        self.assertIn("http://127.0.0.1:9", caught.exception.description)
        self.assertEqual(client.check_status(find_request_id(page.html) or ""), {"status": "pending"})

    def test_a_sign_in_reserved_for_another_agent_is_access_denied(self) -> None:
        other = self.server.create_agent()
        page = Browser(self.server).open_authorize(self.website, login_hint=other["agent_id"])
        with self.assertRaises(AccessDeniedError) as caught:
            self.agent().authenticate(find_request_id(page.html) or "")
        self.assertEqual(caught.exception.status, 403)

    def test_reads_the_id_only_from_a_page_of_the_server(self) -> None:
        client = self.agent()
        real = Browser(self.server).open_authorize(self.website)
        look_alike = Page("http://127.0.0.1:9/authorize", real.html)
        with self.assertRaises(AgentAuthTimeoutError):
            client.read_request_id(look_alike, timeout=0.5)
        self.assertEqual(client.read_request_id(real), find_request_id(real.html))

    def test_waiting_long_polls_and_times_out_with_a_typed_error(self) -> None:
        counting = CountingHandler()
        client = self.agent(opener=urllib.request.build_opener(counting))
        request_id = find_request_id(Browser(self.server).open_authorize(self.website).html) or ""
        with self.assertRaises(AgentAuthTimeoutError) as caught:
            client.wait_for_completion(request_id, timeout=2.5, interval=0.05)
        self.assertEqual(caught.exception.code, "timeout")
        # Polling every 50 ms would have asked some 50 times; the server held a poll instead.
        polls = counting.statuses("/api/check-status")
        self.assertEqual(set(polls), {200})
        self.assertLess(len(polls), 25)
        self.assertTrue(any("wait=2&last_status=pending" in url for url, _ in counting.answers))


class AsyncSignInTest(unittest.IsolatedAsyncioTestCase):
    async def test_the_async_twin_signs_in_with_an_async_page(self) -> None:
        server = Server("main")
        website = server.create_client()
        created = server.create_agent()
        client = AsyncAgentAuthClient(server.url, created["agent_id"], created["agent_secret"], "gpt-test")
        browser = Browser(server)
        page = browser.open_authorize(website)

        class AsyncPage:  # Playwright's async API: url is a property, content() a coroutine
            url = page.url

            async def content(self) -> str:
                return page.html

        request_id = await client.read_request_id(AsyncPage())
        browser_thread = browser.complete_once_authenticated(request_id)
        result = await client.sign_in(AsyncPage(), expected_website=REDIRECT_URI)
        await asyncio.to_thread(browser_thread.join, 30)
        self.assertEqual((result["status"], result["request_id"]), ("completed", request_id))
        self.assertIn("code", browser.landed)
        with self.assertRaises(InvalidCredentialsError):
            await AsyncAgentAuthClient(server.url, created["agent_id"], "wrong", "gpt-test").authenticate(request_id)
        with self.assertRaises(RequestNotFoundError):
            await client.check_status("req_does_not_exist")
