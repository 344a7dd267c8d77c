import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { introspect, issueTokens } from '../helpers/codes.js';
import { usingPostgres } from '../helpers/database.js';
import { startSecondInstance, startTestServer, type TestServer } from '../helpers/server.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

// The bound docs/operations.md ("Grant cache") gives: GRANT_CACHE_MAX_AGE_SECONDS (10 s) at most.
const BOUND_MS = 10_000;

// The embedded store has no network to lose: its notifications arrive with the statement that
// caused them, in the same process. This is a PostgreSQL matter only.
describe.runIf(usingPostgres)(
  'a kill switch when the network silently drops an instance’s connections (PostgreSQL only: PGlite has no network)',
  () => {
    let a: TestServer;
    let b: TestServer;
    let relay: Awaited<ReturnType<typeof startTcpProxy>>;

    beforeAll(async () => {
      const target = new URL(process.env.TEST_DATABASE_URL!);
      relay = await startTcpProxy(Number(target.port || 5432), target.hostname);
      a = await startTestServer();
      // Instance B reaches PostgreSQL through the relay, every connection of it.
      b = await startSecondInstance(a, {
        rewriteDatabaseUrl: (url) => {
          const u = new URL(url);
          u.port = String(relay.port);
          return u.toString();
        },
      });
    });
    afterAll(async () => {
      await relay?.close();
      await b?.close();
      await a?.close();
    });

    it('instance B honours the kill switch on A within the bound, though its LISTEN connection died unseen', async () => {
      const { client, agent, access_token } = await issueTokens(a);
      const activeOnB = async () => {
        const res = await introspect(b, client, access_token);
        return res.statusCode === 200 ? (res.json().active as boolean) : res.statusCode;
      };
      expect(await activeOnB()).toBe(true);
      expect(await activeOnB()).toBe(true); // from B's memory now

      // The path drops B's open connections without a word to either end; new ones get through.
      relay.forgetOpen();
      const revokedAt = Date.now();
      expect((await a.adminCall('POST', `/admin/agents/${agent.agent_id}/revoke-grants`)).statusCode).toBe(200);
      expect((await introspect(a, client, access_token)).json().active).toBe(false);

      // Past the bound, B never again calls the token active (a 503 while it finds its connections
      // dead is allowed), and it comes to say inactive by itself.
      const answers: { at: number; answer: boolean | number }[] = [];
      let answer: boolean | number = true;
      while (answer !== false && Date.now() - revokedAt < 45_000) {
        answer = await activeOnB();
        answers.push({ at: Date.now() - revokedAt, answer });
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(answers.filter((x) => x.at > BOUND_MS && x.answer === true)).toEqual([]);
      expect(answer).toBe(false);
      // The bypass counter rose: B read from the database while it could not trust its memory.
      const metrics = (await b.admin.inject({ url: '/metrics' })).body;
      expect(Number(/^agent_auth_grant_cache_reads_total\{result="bypass"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    }, 60_000);
  },
);
