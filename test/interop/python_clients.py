"""Authlib and requests-oauthlib, as Debian packages them, sign a website in through agent-auth
(test/interop/python-clients.test.ts runs this). The library builds the authorization request and
makes the back-channel calls; this script plays the user's browser and the agent in between.

Prints one JSON object: for each library, what its default did and what the configured client got.
Environment: ISSUER, CLIENT_ID, CLIENT_SECRET, REDIRECT_URI, AGENT_ID, AGENT_SECRET.
"""

import base64
import hashlib
import json
import os
import re
import secrets

import requests

ISSUER = os.environ["ISSUER"]
CLIENT_ID = os.environ["CLIENT_ID"]
CLIENT_SECRET = os.environ["CLIENT_SECRET"]
REDIRECT_URI = os.environ["REDIRECT_URI"]
METADATA = requests.get(f"{ISSUER}/.well-known/oauth-authorization-server", timeout=10).json()


def browser_and_agent(authorization_url):
    """Opens the page, lets the agent authenticate, follows the page to the website: the callback URL."""
    browser = requests.Session()
    page = browser.get(authorization_url, timeout=10)
    if page.status_code != 200:
        return {"status": page.status_code, "page": re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.text))}
    request_id = re.search(r'<meta name="request-id" content="([^"]+)">', page.text).group(1)
    authenticated = requests.post(
        f"{ISSUER}/api/agent/authenticate",
        json={"request_id": request_id, "agent_id": os.environ["AGENT_ID"], "agent_secret": os.environ["AGENT_SECRET"], "model": "python-interop"},
        timeout=10,
    )
    authenticated.raise_for_status()
    done = browser.get(f"{ISSUER}/authorize/complete", params={"request_id": request_id}, allow_redirects=False, timeout=10)
    return {"status": done.status_code, "callback": done.headers["location"]}


def pkce():
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode("ascii")
    return verifier, challenge


def authlib_client():
    from authlib.integrations.requests_client import OAuth2Session

    # Its default: no PKCE, which the server requires.
    plain = OAuth2Session(CLIENT_ID, CLIENT_SECRET, scope="openid email", redirect_uri=REDIRECT_URI)
    default_url, _ = plain.create_authorization_url(METADATA["authorization_endpoint"])
    default = browser_and_agent(default_url)

    # The one setting: code_challenge_method (client_kwargs of the Flask integration's oauth.register).
    client = OAuth2Session(CLIENT_ID, CLIENT_SECRET, scope="openid email", redirect_uri=REDIRECT_URI, code_challenge_method="S256")
    verifier = secrets.token_urlsafe(48)
    url, state = client.create_authorization_url(METADATA["authorization_endpoint"], code_verifier=verifier)
    callback = browser_and_agent(url)["callback"]
    token = client.fetch_token(METADATA["token_endpoint"], authorization_response=callback, state=state, code_verifier=verifier)
    userinfo = client.get(METADATA["userinfo_endpoint"], timeout=10).json()
    return {"default": default, "scope": token["scope"], "userinfo": userinfo}


def requests_oauthlib_client():
    from requests_oauthlib import OAuth2Session

    plain = OAuth2Session(CLIENT_ID, redirect_uri=REDIRECT_URI, scope=["openid", "email"])
    default_url, _ = plain.authorization_url(METADATA["authorization_endpoint"])
    default = browser_and_agent(default_url)

    # 1.3 (Debian 12) has no pkce= option (2.0 has pkce="S256"): the challenge and verifier by hand.
    client = OAuth2Session(CLIENT_ID, redirect_uri=REDIRECT_URI, scope=["openid", "email"])
    verifier, challenge = pkce()
    url, _ = client.authorization_url(METADATA["authorization_endpoint"], code_challenge=challenge, code_challenge_method="S256")
    callback = browser_and_agent(url)["callback"]
    token = client.fetch_token(METADATA["token_endpoint"], authorization_response=callback, client_secret=CLIENT_SECRET, code_verifier=verifier)
    userinfo = client.get(METADATA["userinfo_endpoint"], timeout=10).json()
    return {"default": default, "scope": " ".join(token["scope"]), "userinfo": userinfo}


print(json.dumps({"authlib": authlib_client(), "requests-oauthlib": requests_oauthlib_client()}))
