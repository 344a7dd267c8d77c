/**
 * Back-channel logout is fair across websites: a website whose logout endpoint accepts the
 * connection and never answers holds two deliveries in flight per instance at most, is backed off
 * as a whole after it times out (one probe, not one attempt per grant), and every other website's
 * logout token still arrives within 5 s of a kill switch, on one instance and on two.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogoutSender, SENDER_TIMINGS, type SenderTimings, startLogoutSender } from '../../src/logout/sender.js';
import { exchangeCode, insertCode } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { within } from '../helpers/poll.js';
import { startSecondInstance, startTestServer, type TestServer } from '../helpers/server.js';

/** A logout endpoint: answers 200 and records when each session's token came, or (`blackHole`) never answers. */
async function startWebsite(blackHole = false) {
  const arrivals = new Map<string, number>();
  const state = { blackHole, requests: 0 };
  const server: Server = createServer((req, res) => {
    state.requests++;
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      if (state.blackHole) return;
      arrivals.set(decodeJwt(new URLSearchParams(body).get('logout_token')!).sid as string, Date.now());
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    arrivals,
    state,
    uri: `http://127.0.0.1:${(server.address() as AddressInfo).port}/logout`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
type Website = Awaited<ReturnType<typeof startWebsite>>;

describe(`back-channel logout fairness (${storeName})`, () => {
  let server: TestServer;
  const websites: Website[] = [];
  beforeAll(async () => {
    server = await startTestServer({ ID_TOKEN_SIGNING_ALG: 'RS256' });
  });
  afterAll(async () => {
    await Promise.all(websites.map((w) => w.close()));
    await server.close();
  });

  const senderOn = (on: TestServer, timings: SenderTimings) =>
    startLogoutSender({ ...on.services, signingKeys: on.services.signingKeys!, log: on.app.log }, timings);

  /** A website registered with its logout endpoint, and `grants` grants of `agent` there; returns their session ids. */
  async function registered(website: Website, agent: { agent_id: string }, grants: number) {
    const created = await server.adminCall('POST', '/admin/clients', {
      name: 'Website',
      redirect_uris: ['https://shop.example/callback'],
      backchannel_logout_uri: website.uri,
    });
    expect(created.statusCode, JSON.stringify(created.json)).toBe(201);
    const sids: string[] = [];
    for (let i = 0; i < grants; i++) {
      const { code, verifier } = await insertCode(server.services, {
        clientId: created.json.client_id,
        agentId: agent.agent_id,
        redirectUri: 'https://shop.example/callback',
        scope: 'openid',
      });
      const tokens = (await exchangeCode(server, created.json, code, verifier)).json();
      sids.push(decodeJwt(tokens.id_token).sid as string);
    }
    return sids;
  }

  it.each([1, 2])(
    "delivers every other website's logout token within 5 s of the kill switch while one website holding 100 grants never answers (%i instance(s))",
    async (instances) => {
      const email = `kill-switch-${instances}@example.com`;
      const agent = await server.createAgent(email);
      const blackHole = await startWebsite(true);
      const healthy = await Promise.all([1, 2, 3, 4, 5].map(() => startWebsite()));
      websites.push(blackHole, ...healthy);
      await registered(blackHole, agent, 100);
      const healthySids = (await Promise.all(healthy.map(async (website) => ({ website, sids: await registered(website, agent, 2) })))).flat();

      const second = instances === 2 ? await startSecondInstance(server) : undefined;
      const senders: LogoutSender[] = [await senderOn(server, SENDER_TIMINGS)];
      if (second) senders.push(await senderOn(second, SENDER_TIMINGS));
      try {
        const killed = Date.now();
        const revoked = await server.adminCall('POST', '/admin/users/revoke-grants', { email });
        expect(revoked.json.revoked).toBe(110);
        const arrivedAll = () => healthySids.every(({ website, sids }) => sids.every((sid) => website.arrivals.has(sid)));
        expect(await within(5000, async () => arrivedAll()), 'every healthy website heard within 5 s').toBe(true);
        const slowest = Math.max(...healthySids.flatMap(({ website, sids }) => sids.map((sid) => website.arrivals.get(sid)! - killed)));
        expect(slowest).toBeLessThan(5000);
        // The black hole got two deliveries per instance, not a slot per grant.
        expect(blackHole.state.requests).toBeLessThanOrEqual(2 * instances);
      } finally {
        for (const sender of senders) await sender.stop();
        await second?.close();
      }
    },
    120_000,
  );

  it('backs off a website that times out as a whole: one probe at a time, and the rest follow once it answers', async () => {
    const agent = await server.createAgent();
    const website = await startWebsite(true);
    websites.push(website);
    const sids = await registered(website, agent, 20);
    const timings: SenderTimings = { ...SENDER_TIMINGS, timeout: 0.5, poll: 0.1, firstDelay: 0.6, maxDelay: 0.6 };
    const sender = await senderOn(server, timings);
    try {
      await server.adminCall('POST', `/admin/agents/${agent.agent_id}/revoke-grants`);
      // 3 s: the first two time out, then one probe about every 1.1 s (0.5 s timeout, 0.3 to 0.6 s pause).
      await new Promise((r) => setTimeout(r, 3000));
      expect(website.state.requests).toBeGreaterThanOrEqual(3);
      expect(website.state.requests).toBeLessThanOrEqual(7);
      const { rows } = await server.services.db.query<{ timeouts: number }>(
        `SELECT w.timeouts FROM logout_websites w JOIN logout_deliveries d ON d.client_id = w.client_id WHERE d.sid = $1`,
        [sids[0]],
      );
      expect(rows[0].timeouts).toBeGreaterThanOrEqual(2);

      // The website answers again: the next probe gets through, and everything waiting follows.
      website.state.blackHole = false;
      expect(await within(10_000, async () => sids.every((sid) => website.arrivals.has(sid)))).toBe(true);
      const after = await server.services.db.query(
        `SELECT 1 FROM logout_websites w JOIN logout_deliveries d ON d.client_id = w.client_id WHERE d.sid = $1`,
        [sids[0]],
      );
      expect(after.rows).toEqual([]);
    } finally {
      await sender.stop();
    }
  }, 60_000);
});
