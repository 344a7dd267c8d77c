import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, startAuthorize } from '../helpers/flow.js';
import { closeAll, startSecondInstance, startTestServer, type TestServer } from '../helpers/server.js';
import { type Mail, startSmtp, type TestSmtp } from '../helpers/smtp.js';

/**
 * Approval mails coalesce (docs/security.md, third red team: 30 sign-ins of one agent were 30 mails):
 * at most one per owner per APPROVAL_MAIL_INTERVAL_SECONDS (a minute by default; 15 s here, so that the
 * test need not wait a minute), across instances, saying how many sign-ins wait; those that start
 * within the interval wait in the portal, and one more mail tells of them when it is over.
 */
const INTERVAL = 15;

describe(`approval mails to owners coalesce (${storeName})`, () => {
  let smtp: TestSmtp;
  let server: TestServer;
  let second: TestServer;
  let client: Awaited<ReturnType<TestServer['createClient']>>;
  beforeAll(async () => {
    smtp = await startSmtp();
    server = await startTestServer({ SMTP_URL: smtp.url, APPROVAL_MAIL_INTERVAL_SECONDS: String(INTERVAL) });
    second = await startSecondInstance(server);
    client = await server.createClient();
  });
  afterAll(async () => {
    await closeAll(second, server);
    await smtp?.close();
  });

  /** An agent whose owner approves every sign-in. */
  async function agentAskingAlways() {
    const email = `owner-${Math.random().toString(36).slice(2)}@example.com`;
    const agent = await server.createAgent(email);
    await server.services.db.query(`UPDATE users SET approval_policy = 'always' WHERE email = $1`, [email]);
    return { email, agent };
  }
  /** `n` sign-ins of the agent, each waiting for its owner, through the instances in turn. */
  async function signIns(agent: { agent_id: string; agent_secret: string }, n: number, instances: TestServer[]) {
    for (let i = 0; i < n; i++) {
      const on = instances[i % instances.length];
      const { requestId } = await startAuthorize(on, client);
      const auth = await agentAuthenticate(on, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
      expect(auth.json().approval).toBe('pending');
    }
  }
  const mailsTo = (email: string): Mail[] => smtp.received.filter((m) => m.to === email);
  const settle = () => new Promise((r) => setTimeout(r, 1500));

  it('30 sign-ins on one instance: one mail within the interval; another owner is mailed on their own', async () => {
    const { email, agent } = await agentAskingAlways();
    const other = await agentAskingAlways();
    await signIns(agent, 30, [server]);
    await signIns(other.agent, 1, [server]);
    await settle();
    expect(mailsTo(email)).toHaveLength(1);
    expect(mailsTo(email)[0].text).toContain('/account/approvals');
    expect(mailsTo(email)[0].text).toContain(`at most one of these mails in ${INTERVAL} seconds`);
    expect(mailsTo(other.email)).toHaveLength(1);
    // A sign-in after the interval is mailed again, saying how many wait.
    await server.services.db.query(`UPDATE users SET approval_mailed_at = now() - interval '${INTERVAL + 1} seconds' WHERE email = $1`, [email]);
    await signIns(agent, 1, [server]);
    await settle();
    expect(mailsTo(email)).toHaveLength(2);
    expect(mailsTo(email)[1].subject).toContain('(31 waiting)');
    expect(mailsTo(email)[1].text).toContain('In all, 31 sign-ins of your agents are waiting for you');
  });

  it('30 sign-ins across two instances: one mail within the interval, then one that tells of those still waiting', async () => {
    const { email, agent } = await agentAskingAlways();
    const started = Date.now();
    await signIns(agent, 30, [server, second]);
    await settle();
    expect(mailsTo(email)).toHaveLength(1);
    const first = mailsTo(email)[0];
    // The interval over, exactly one more mail, from whichever instance got there first.
    const rest = Math.max(0, started + INTERVAL * 1000 - Date.now());
    await new Promise((r) => setTimeout(r, rest + 4000));
    expect(mailsTo(email)).toHaveLength(2);
    expect(first.subject).not.toContain('waiting)');
    expect(mailsTo(email)[1].subject).toContain('(30 waiting)');
    await settle();
    expect(mailsTo(email)).toHaveLength(2);
  }, 60_000);
});
