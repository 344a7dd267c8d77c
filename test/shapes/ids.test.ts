import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordId } from '../../src/shapes/ids.js';
import { storeName } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** The one rule of a record's id in a request (src/shapes/ids.ts), and its answer in a path. */
describe('the id of a record', () => {
  const id = recordId();

  it('accepts every id that exists: minted ids, client ids that are URLs, resource URLs, key ids', () => {
    for (const existing of [
      'agent_Xy3-_q',
      'client_abc',
      'pk_0123456789',
      'https://app.example/.well-known/oauth-client.json',
      'https://mcp.example/mcp?tenant=1',
      'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs',
      'x'.repeat(200),
    ]) {
      expect(id.safeParse(existing).success, existing).toBe(true);
    }
  });

  it('refuses what no id can be: empty, over-long, NUL and other unprintable characters', () => {
    for (const impossible of ['', 'x'.repeat(201), 'a\u0000b', '\u0000', 'agent_\u202e', 'a\u200bb', 'line\nbreak']) {
      expect(id.safeParse(impossible).success, JSON.stringify(impossible)).toBe(false);
    }
  });
});

describe(`an id that cannot exist, in a path (${storeName})`, () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  // An over-long one never reaches the schema: the router answers 414 first (src/fastify.ts, maxParamLength).
  it('is a record that does not exist: 404 not_found, as an unknown one is', async () => {
    for (const path of ['/admin/agents/a%00b', '/admin/clients/%E2%80%AE', '/admin/agents/agent_unknown']) {
      const res = await server.adminCall('GET', path);
      expect(res.statusCode, path).toBe(404);
      expect(res.json.error, path).toBe('not_found');
    }
    const metadata = await server.app.inject({ url: '/agents/a%01b/client-metadata.json' });
    expect(metadata.statusCode).toBe(404);
    expect(metadata.json().error).toBe('not_found');
  });

  it('in a query or a body it is a bad request, as any other malformed value', async () => {
    const res = await server.adminCall('GET', '/admin/logout-deliveries?client_id=%00');
    expect(res.statusCode).toBe(400);
    expect(res.json.error).toBe('invalid_request');
  });
});
