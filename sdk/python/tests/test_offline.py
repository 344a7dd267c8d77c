"""Parts of the SDK that need no agent-auth server: parsing, and retries against a failing stand-in."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List

from agent_auth import (
    AccessDeniedError,
    AgentAuthClient,
    AgentAuthError,
    AgentAuthTimeoutError,
    OwnerDeniedError,
    find_request_id,
    parse_retry_after,
    poll_delay,
    WrongWebsiteError,
)


class FindRequestIdTest(unittest.TestCase):
    def test_reads_the_meta_tag_whatever_the_attribute_order_quoting_and_entities(self) -> None:
        self.assertEqual(find_request_id('<head><meta name="request-id" content="req_abc"></head>'), "req_abc")
        self.assertEqual(find_request_id("<META content='req_abc' NAME='request-id' />"), "req_abc")
        self.assertEqual(find_request_id('<meta name="request-id" content="a&amp;b&#39;c&#x3c;">'), "a&b'c<")

    def test_falls_back_to_the_script_literal_in_every_quoting(self) -> None:
        self.assertEqual(find_request_id('<script>window.authRequest = { request_id: "req_\\u003cx" };</script>'), "req_<x")
        self.assertEqual(find_request_id('<script>window.authRequest = {"request_id":"req_q"};</script>'), "req_q")
        self.assertEqual(find_request_id("<script>window.authRequest = { request_id: 'req_s' };</script>"), "req_s")

    def test_finds_nothing_on_other_pages(self) -> None:
        self.assertIsNone(find_request_id('<meta name="description" content="shop">'))
        self.assertIsNone(find_request_id("<script>window.authRequest = {broken};</script>"))
        self.assertIsNone(find_request_id('<script>window.authRequest = { request_id: "" };</script>'))


class PollingArithmeticTest(unittest.TestCase):
    def test_retry_after_in_both_forms(self) -> None:
        self.assertEqual(parse_retry_after("7"), 7)
        self.assertEqual(parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480), 10)
        self.assertIsNone(parse_retry_after("soon"))
        self.assertIsNone(parse_retry_after(None))

    def test_backoff_doubles_up_to_the_cap(self) -> None:
        self.assertEqual([poll_delay(n) for n in range(3)], [1.0, 1.0, 1.0])
        self.assertEqual([poll_delay(n, backoff=True) for n in range(7)], [1, 2, 4, 8, 16, 30, 30])


class StandIn(BaseHTTPRequestHandler):
    """A stand-in server's handler: answers with a body, and keeps the test output quiet."""

    def answer(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class Flaky(StandIn):
    """Answers check-status with 503, then a page that is not JSON, then completed."""

    answers: List[int] = []

    def do_GET(self) -> None:
        Flaky.answers.append(len(Flaky.answers))
        n = len(Flaky.answers)
        status, body, kind = (503, b"<h1>busy</h1>", "text/html") if n <= 2 else (200, json.dumps({"status": "completed"}).encode(), "application/json")
        self.answer(status, body, kind)


class PunycodeWebsite(StandIn):
    """Answers authenticate as a server does for an internationalised website: its punycode origin."""

    bodies: List[dict] = []

    def do_POST(self) -> None:
        PunycodeWebsite.bodies.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
        body = json.dumps({"status": "authenticated", "redirect_origin": "https://xn--bcher-kva.example"}).encode()
        self.answer(200, body)


class ExpectedWebsiteTest(unittest.TestCase):
    def setUp(self) -> None:
        stand_in = ThreadingHTTPServer(("127.0.0.1", 0), PunycodeWebsite)
        threading.Thread(target=stand_in.serve_forever, daemon=True).start()
        self.addCleanup(stand_in.server_close)
        self.addCleanup(stand_in.shutdown)
        self.client = AgentAuthClient(f"http://127.0.0.1:{stand_in.server_port}", "agent_x", "secret", "gpt-test")
        PunycodeWebsite.bodies.clear()

    def test_an_internationalised_website_is_compared_in_idna_form(self) -> None:
        result = self.client.authenticate("req_x", expected_website="https://Bücher.example/login")
        self.assertEqual(result["redirect_origin"], "https://xn--bcher-kva.example")
        self.assertEqual(PunycodeWebsite.bodies[0]["expected_redirect_origin"], "https://xn--bcher-kva.example")

    def test_another_website_is_still_refused(self) -> None:
        with self.assertRaises(WrongWebsiteError):
            self.client.authenticate("req_x", expected_website="https://bucher.example")


class TransientFailuresTest(unittest.TestCase):
    def test_waiting_retries_5xx_answers(self) -> None:
        stand_in = ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
        threading.Thread(target=stand_in.serve_forever, daemon=True).start()
        self.addCleanup(stand_in.server_close)
        self.addCleanup(stand_in.shutdown)
        client = AgentAuthClient(f"http://127.0.0.1:{stand_in.server_port}", "agent_x", "secret", "gpt-test")
        self.assertEqual(client.wait_for_completion("req_x", timeout=20, interval=0.05), {"status": "completed"})
        self.assertEqual(len(Flaky.answers), 3)

    def test_waiting_retries_network_failures_until_the_timeout(self) -> None:
        client = AgentAuthClient("http://127.0.0.1:9", "agent_x", "secret", "gpt-test")
        with self.assertRaises(AgentAuthTimeoutError) as caught:
            client.wait_for_completion("req_x", timeout=0.5, interval=0.05)
        self.assertIsInstance(caught.exception.__cause__, AgentAuthError)
        self.assertEqual(caught.exception.__cause__.code, "network_error")  # type: ignore[union-attr]

    def test_a_base_url_must_be_http(self) -> None:
        with self.assertRaises(ValueError):
            AgentAuthClient("ftp://auth.example", "agent_x", "secret", "gpt-test")


class AwaitingOwner(StandIn):
    """Answers check-status with the owner's approval pending, then ``final``; records the queries."""

    final: dict = {}
    queries: List[str] = []

    def do_GET(self) -> None:
        AwaitingOwner.queries.append(self.path)
        pending = {"status": "authenticated", "approval": "pending"}
        body = json.dumps(pending if len(AwaitingOwner.queries) <= 2 else AwaitingOwner.final).encode()
        self.answer(200, body)


class OwnerApprovalTest(unittest.TestCase):
    def client(self, final: dict) -> AgentAuthClient:
        AwaitingOwner.final, AwaitingOwner.queries = final, []
        stand_in = ThreadingHTTPServer(("127.0.0.1", 0), AwaitingOwner)
        threading.Thread(target=stand_in.serve_forever, daemon=True).start()
        self.addCleanup(stand_in.server_close)
        self.addCleanup(stand_in.shutdown)
        return AgentAuthClient(f"http://127.0.0.1:{stand_in.server_port}", "agent_x", "secret", "gpt-test")

    def test_waits_through_a_pending_approval_past_the_timeout_until_approved(self) -> None:
        client = self.client({"status": "authenticated", "approval": "approved"})
        state = client.wait_for_completion("req_x", timeout=0.01, interval=0.05, until="authenticated", approval_timeout=20)
        self.assertEqual(state, {"status": "authenticated", "approval": "approved"})
        self.assertIn("last_approval=pending", AwaitingOwner.queries[-1])

    def test_the_owners_denial_is_owner_denied_error_an_access_denied_error(self) -> None:
        denied = {"status": "error", "error": "access_denied", "error_description": "the agent's owner denied this sign-in"}
        client = self.client({**denied, "approval": "denied"})
        with self.assertRaises(OwnerDeniedError) as caught:
            client.wait_for_completion("req_x", timeout=0.01, interval=0.05, approval_timeout=20)
        self.assertIsInstance(caught.exception, AccessDeniedError)
        # Any other access_denied (a kill switch while waiting, say) stays an AccessDeniedError.
        client = self.client({**denied, "error_description": "this sign-in was denied"})
        with self.assertRaises(AccessDeniedError) as other:
            client.wait_for_completion("req_x", timeout=0.01, interval=0.05, approval_timeout=20)
        self.assertNotIsInstance(other.exception, OwnerDeniedError)


class StandardLibraryOnlyTest(unittest.TestCase):
    """The core SDK needs nothing but Python; only signing with a key needs the ``keys`` extra."""

    def test_the_core_works_without_cryptography_and_a_key_says_what_to_install(self) -> None:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        script = "\n".join(
            [
                "import sys",
                "sys.modules['cryptography'] = None  # as if it were not installed",
                "import agent_auth, agent_auth.aio",
                "agent_auth.AgentAuthClient('http://127.0.0.1:9', 'agent_x', 'aa_as_x', 'model-1')",
                "try:",
                "    agent_auth.AgentAuthClient('http://127.0.0.1:9', 'agent_x', model='model-1', private_key='-')",
                "except ImportError as err:",
                "    print(err)",
            ]
        )
        run = subprocess.run([sys.executable, "-c", script], cwd=package, capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn('pip install "agent-auth[keys]"', run.stdout)

    def test_every_import_of_the_package_is_the_standard_library_but_the_keys_lazy_one(self) -> None:
        if not hasattr(sys, "stdlib_module_names"):
            self.skipTest("sys.stdlib_module_names needs Python 3.10")
        source = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agent_auth")
        foreign = []
        for name in sorted(os.listdir(source)):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(source, name), encoding="utf-8") as file:
                tree = ast.parse(file.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top == "agent_auth" or (name == "keys.py" and top == "cryptography"):
                        continue
                    foreign.append(f"{name}: {module}")
        self.assertEqual(foreign, [])
