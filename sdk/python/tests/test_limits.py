"""Rate limits and expiry, on servers started with tiny limits and a 1-second request lifetime."""

from __future__ import annotations

import time
import unittest
import urllib.request

from agent_auth import AgentAuthClient, InvalidCredentialsError, RateLimitedError, RequestExpiredError, find_request_id

from .support import Browser, CountingHandler, Server


class RateLimitTest(unittest.TestCase):
    """The limited server allows 2 failed authentications per agent id and address and 3 check-status
    calls per address in a 2-second window."""

    def setUp(self) -> None:
        self.server = Server("limited")
        self.website = self.server.create_client()
        created = self.server.create_agent()
        self.guesser = AgentAuthClient(self.server.url, created["agent_id"], "not-the-secret", "gpt-test")
        self.counting = CountingHandler()
        self.client = AgentAuthClient(
            self.server.url, created["agent_id"], created["agent_secret"], "gpt-test", opener=urllib.request.build_opener(self.counting)
        )

    def spend_authenticate_budget(self) -> None:
        """Failed guesses of the agent's secret count against the agent id from this address."""
        for _ in range(2):
            with self.assertRaises(InvalidCredentialsError):
                self.guesser.authenticate("req_does_not_exist")

    def test_a_rate_limited_call_is_a_typed_error_with_retry_after(self) -> None:
        self.spend_authenticate_budget()
        with self.assertRaises(RateLimitedError) as caught:
            self.client.authenticate("req_does_not_exist")
        self.assertEqual((caught.exception.code, caught.exception.status), ("rate_limited", 429))
        self.assertIsNotNone(caught.exception.retry_after)
        self.assertGreater(caught.exception.retry_after or 0, 0)

    def test_sign_in_waits_out_retry_after_before_authenticating_again(self) -> None:
        page = Browser(self.server).open_authorize(self.website)
        self.spend_authenticate_budget()
        result = self.client.sign_in(page, until="authenticated", timeout=30)
        self.assertEqual(result["status"], "authenticated")
        # One refusal, then the wait: retrying early would have been refused again.
        self.assertEqual(self.counting.statuses("/api/agent/authenticate").count(429), 1)

    def test_waiting_honours_retry_after_of_check_status(self) -> None:
        browser = Browser(self.server)
        request_id = find_request_id(browser.open_authorize(self.website).html) or ""
        self.client.authenticate(request_id)
        browser.complete(request_id)
        for _ in range(10):  # spend this address's check-status budget
            try:
                self.client.check_status(request_id)
            except RateLimitedError:
                break
        self.counting.answers.clear()
        result = self.client.wait_for_completion(request_id, timeout=30, interval=0.05)
        self.assertEqual(result, {"status": "completed"})
        # Polling every 50 ms through the refusal would have met a 429 some 40 times.
        self.assertEqual(self.counting.statuses("/api/check-status").count(429), 1)


class ExpiryTest(unittest.TestCase):
    def test_an_expired_request_is_a_typed_error_for_authenticate_and_for_waiting(self) -> None:
        server = Server("short")
        created = server.create_agent()
        client = AgentAuthClient(server.url, created["agent_id"], created["agent_secret"], "gpt-test")
        request_id = find_request_id(Browser(server).open_authorize(server.create_client()).html) or ""
        time.sleep(1.5)
        with self.assertRaises(RequestExpiredError) as caught:
            client.authenticate(request_id)
        self.assertEqual((caught.exception.code, caught.exception.status), ("request_expired", 400))
        with self.assertRaises(RequestExpiredError):
            client.wait_for_completion(request_id, timeout=5)
