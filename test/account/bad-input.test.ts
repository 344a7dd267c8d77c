import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { expectJsonError } from '../helpers/fuzz.js';
import { serverWithMail, signInOwner } from '../helpers/owner.js';
import { ISSUER } from '../helpers/server.js';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
interface Operation {
  requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> };
}

/** Ids no route should choke on: encoded NUL, control and bidi characters, traversal, length, another kind of id. */
const HOSTILE_IDS = ['x', '%00', 'agent_%00', '%E2%80%AE', '..%2F..%2Fadmin', 'a'.repeat(600), '%C3%A4gent', 'client_x', '%20', '%FF'];

/** Values of the wrong kind for any field, and strings that break stores and parsers. */
const HOSTILE_VALUES: unknown[] = [
  null,
  0,
  -1,
  1e308,
  true,
  [],
  {},
  [1, 'x'],
  { nested: { deeper: [null] } },
  '',
  ' ',
  'nul\u0000here',
  '\uD800',
  'x'.repeat(5000),
];

/** Raw bodies that are not the object any route wants. */
const HOSTILE_BODIES = [
  'null',
  '[]',
  '"text"',
  '17',
  'true',
  '{',
  '{"a":',
  '{"__proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"x":1}}}',
  '\u0000',
];

/**
 * Bad input on the owner API (docs/protocol.md, "Owners"): every route in the OpenAPI description under
 * /account/api/, called by a signed-in owner with hostile ids, hostile raw bodies and each declared field set
 * to values of the wrong kind, answers a 4xx `{error, error_description}` (or, for a value it may take, a
 * success), never a 5xx, never a page or a stack.
 */
describe(`bad input on the owner API (${storeName})`, () => {
  const started = serverWithMail();

  it('answers hostile ids, bodies and field values with the error format, never a 5xx', async () => {
    const { server, smtp } = started;
    const email = `owner-${Math.random().toString(36).slice(2)}@example.com`;
    const owner = await signInOwner(server.app, smtp, email);
    const agent = (await owner.call('POST', '/account/api/agents', { name: 'Target' })).json();
    const client = await server.createClient();
    const jwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
    const { kid } = (await owner.call('POST', `/account/api/agents/${agent.agent_id}/keys`, { jwk })).json();
    const ids: Record<string, string> = { id: agent.agent_id, client_id: client.client_id, kid, request_id: 'req_none' };

    const doc = (await server.app.inject({ url: '/docs/json' })).json();
    const routes = Object.entries<Record<string, Operation>>(doc.paths).filter(([path]) => path.startsWith('/account/api/'));
    expect(routes.length).toBeGreaterThanOrEqual(12);
    const send = (method: Method, url: string, payload?: string) =>
      server.app.inject({
        method,
        url,
        headers: { cookie: owner.cookie, ...(method === 'GET' ? {} : { 'content-type': 'application/json', origin: ISSUER }) },
        ...(payload === undefined ? {} : { payload }),
      });
    const fine = (res: Awaited<ReturnType<typeof send>>, what: string) => {
      expect(res.statusCode, `${what}: ${res.body.slice(0, 300)}`).toBeLessThan(500);
      if (res.statusCode >= 400) expectJsonError(res);
    };

    let calls = 0;
    const seen = new Set<string>();
    for (const [path, operations] of routes) {
      for (const [lower, operation] of Object.entries(operations)) {
        const method = lower.toUpperCase() as Method;
        const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
        // Each path parameter hostile in turn, the others real.
        for (const param of params) {
          for (const hostile of HOSTILE_IDS) {
            const url = path.replace(/\{(\w+)\}/g, (_, name: string) => (name === param ? hostile : ids[name]));
            const res = await send(method, url, method === 'GET' || method === 'DELETE' ? undefined : '{}');
            fine(res, `${method} ${url}`);
            expect(res.statusCode, `${method} ${url}`).not.toBe(200);
            calls++;
          }
        }
        if (method === 'GET' || method === 'DELETE') continue;
        const url = path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name]);
        for (const raw of HOSTILE_BODIES) {
          fine(await send(method, url, raw), `${method} ${url} with body ${JSON.stringify(raw)}`);
          calls++;
        }
        const fields = Object.keys(operation.requestBody?.content?.['application/json']?.schema?.properties ?? {});
        for (const field of fields) {
          seen.add(field);
          for (const value of HOSTILE_VALUES) {
            fine(
              await send(method, url, JSON.stringify({ [field]: value })),
              `${method} ${url} with ${field}: ${JSON.stringify(value)?.slice(0, 40)}`,
            );
            calls++;
          }
        }
      }
    }
    expect(calls).toBeGreaterThan(300);
    expect([...seen]).toEqual(expect.arrayContaining(['name', 'active', 'approval_policy', 'notify_new_website', 'jwk', 'decision', 'credential']));
    // The owner's agent and key are still there, and nothing leaked onto the prototype.
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((await owner.call('GET', `/account/api/agents/${agent.agent_id}/keys`)).json().keys.map((k: { kid: string }) => k.kid)).toContain(kid);
  });
});
