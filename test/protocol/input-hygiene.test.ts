import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, startAuthorize } from '../helpers/flow.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// C0 and C1 controls, bidi overrides and isolates, zero-width and other format characters, line separators.
const UNPRINTABLE = [
  '\u0000',
  '\u0007',
  '\u001b[31m',
  '\n',
  '\u007f',
  '\u0085',
  '\u009b',
  '\u202a',
  '\u202e',
  '\u2066',
  '\u2069',
  '\u200b',
  '\u200d',
  '\ufeff',
  '\u2028',
];

describe(`names, models and ids refuse what would garble logs, the CLI and tokens (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  const count = async (table: string) => Number((await server.services.db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);

  it('refuses such characters in client and agent names with 400 invalid_request, writing nothing', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const [clients, agents] = [await count('clients'), await count('agents')];
    for (const char of UNPRINTABLE) {
      const name = `Shop${char}pohS`;
      const attempts = [
        await server.adminCall('POST', '/admin/clients', { name, redirect_uris: ['https://shop.example/cb'] }),
        await server.adminCall('PATCH', `/admin/clients/${client.client_id}`, { name }),
        await server.adminCall('POST', '/admin/agents', { email: 'names@example.com', name }),
        await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { name }),
      ];
      for (const res of attempts) {
        expect(res.statusCode, JSON.stringify(char)).toBe(400);
        expect(res.json).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('name') });
      }
    }
    expect([await count('clients'), await count('agents')]).toEqual([clients, agents]);
    expect((await server.adminCall('GET', `/admin/clients/${client.client_id}`)).json.name).toBe('Shop');
  });

  it('keeps every printable script and emoji', async () => {
    const name = 'Café Ünïcode 日本語 עברית 🚀';
    const res = await server.adminCall('POST', '/admin/clients', { name, redirect_uris: ['https://shop.example/cb'] });
    expect(res.statusCode).toBe(201);
    expect(res.json.name).toBe(name);
  });

  it('refuses such characters in the model, and ids outside their alphabet, before any audit row', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const { requestId } = await startAuthorize(server, client);
    const valid = { request_id: requestId, agent_id: agent.agent_id, agent_secret: 'aa_as_wrong', model: 'test-model-1' };
    const audited = await count('audit_events');
    const refusals = [
      ...UNPRINTABLE.map((char) => ({ ...valid, model: `model${char}-1` })),
      ...['agent x', 'agent_\u202e', 'agent_x\n', 'agent_é', 'a'.repeat(65), ''].map((agent_id) => ({ ...valid, agent_id })),
      ...['req x', 'req_\u0000', 'req_../', 'r'.repeat(65)].map((request_id) => ({ ...valid, request_id })),
    ];
    for (const body of refusals) {
      const res = await agentAuthenticate(server, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toBe('invalid_request');
    }
    expect(await count('audit_events')).toBe(audited);

    // Well-formed values get as far as the secret check, and that failure is audited.
    expect((await agentAuthenticate(server, valid)).statusCode).toBe(401);
    expect(await count('audit_events')).toBe(audited + 1);
    const ok = await agentAuthenticate(server, { ...valid, agent_secret: agent.agent_secret, model: 'claude-sonnet-4.5 (Opus 日本)' });
    expect(ok.statusCode).toBe(200);
  });
});
