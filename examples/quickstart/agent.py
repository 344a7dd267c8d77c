# An agent that signs in to a website with "Sign in with agent" (the README's quick start).
#   AGENT_ID=… AGENT_SECRET=… python examples/quickstart/agent.py
import os
from urllib.parse import urlsplit

from playwright.sync_api import sync_playwright

from agent_auth import AgentAuthClient

auth_url = os.environ.get("AGENT_AUTH_URL", "http://localhost:3000")  # agent-auth's issuer
website_url = os.environ.get("WEBSITE_URL", "http://localhost:8080")  # where the agent signs in


def on_website(url: str) -> bool:
    return urlsplit(url)[:2] == urlsplit(website_url)[:2]


agent = AgentAuthClient(auth_url, os.environ["AGENT_ID"], os.environ["AGENT_SECRET"], model="my-model-1")

with sync_playwright() as playwright:
    # Debian's Chromium (apt-get install chromium), or the one CHROMIUM_PATH names: nothing is downloaded.
    browser = playwright.chromium.launch(
        executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"),
        args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
    )
    try:
        page = browser.new_page()
        page.goto(website_url)
        page.get_by_role("link", name="Sign in with agent").click()
        # Reads the request id off agent-auth's page, authenticates for this website only, and waits
        # until the browser has the code.
        agent.sign_in(page, expected_website=website_url)
        # The browser is now on its way back: wait until the website has taken the code.
        page.wait_for_url(on_website)
        print(f"Back on {page.url}: {page.locator('body').inner_text()}")
    finally:
        browser.close()
