import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe(`validation errors speak the caller's language (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  const authenticate = async (payload: object) => {
    const res = await server.app.inject({ method: 'POST', url: '/api/agent/authenticate', payload });
    expect(res.statusCode).toBe(400);
    return res.json();
  };
  const body = { request_id: 'req_x', agent_id: 'agent_x', agent_secret: 'secret' };

  it('names the field and says what it needs, in plain words', async () => {
    expect(await authenticate(body)).toEqual({ error: 'invalid_request', error_description: 'the "model" field is required' });
    expect((await authenticate({ ...body, model: 5 })).error_description).toBe('the "model" field must be text');
    expect((await authenticate({ ...body, model: '' })).error_description).toBe('the "model" field must not be empty');
    expect((await authenticate({ ...body, model: 'm'.repeat(201) })).error_description).toBe('the "model" field must be at most 200 characters');
  });

  it('says "query parameter" for the query string', async () => {
    const missing = await server.app.inject({ method: 'GET', url: '/api/check-status' });
    expect(missing.json()).toEqual({ error: 'invalid_request', error_description: 'the "request_id" query parameter is required' });
    const wait = await server.app.inject({ method: 'GET', url: '/api/check-status?request_id=req_x&wait=soon' });
    expect(wait.json().error_description).toBe('the "wait" query parameter must be a number');
  });

  it('keeps our own rules as written', async () => {
    expect((await authenticate({ ...body, request_id: 'not an id!', model: 'm' })).error_description).toBe(
      'the "request_id" field must be an id: 1 to 64 letters, digits, "_" or "-"',
    );
  });
});
