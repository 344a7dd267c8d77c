import { expect } from 'vitest';

export interface SigningAgent {
  agent_id: string;
  agent_secret: string;
}

/**
 * The user's browser and the agent, between a client library's authorization URL and its callback:
 * the browser opens the page and keeps the binding cookie, the agent reads the request id off the
 * page and authenticates, the browser follows /authorize/complete. Returns the callback URL.
 */
export async function browserAndAgent(issuer: string, authorizationUrl: URL | string, agent: SigningAgent, model = 'interop-model'): Promise<URL> {
  const page = await fetch(authorizationUrl, { redirect: 'manual' });
  const html = await page.text();
  expect(page.status, html).toBe(200);
  const requestId = /<meta name="request-id" content="([^"]+)">/.exec(html)?.[1];
  expect(requestId).toMatch(/^req_/);
  const cookie = page.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');

  const auth = await fetch(`${issuer}/api/agent/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model }),
  });
  expect(auth.status, await auth.text()).toBe(200);

  const done = await fetch(`${issuer}/authorize/complete?request_id=${requestId}`, { headers: { cookie }, redirect: 'manual' });
  expect(done.status).toBe(302);
  return new URL(done.headers.get('location')!);
}

/** Cookies as a browser keeps them for one website: by name, last one wins (no expiry, no paths). */
export class CookieJar {
  private cookies = new Map<string, string>();
  store(res: Response) {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      this.cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  /** A browser request to the website: cookies sent, cookies kept, redirects left to the caller. */
  async fetch(url: string | URL, init: RequestInit = {}) {
    const res = await fetch(url, { ...init, redirect: 'manual', headers: { ...init.headers, cookie: this.header() } });
    this.store(res);
    return res;
  }
}
