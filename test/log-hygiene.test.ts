import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions } from '../src/logger.js';
import { exchangeCode, introspect, refresh, revoke, userinfo } from './helpers/codes.js';
import { storeName } from './helpers/database.js';
import { agentAuthenticate, signInToCode, startAuthorize } from './helpers/flow.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from './helpers/server.js';

describe(`logs never carry secrets (${storeName})`, () => {
  let server: TestServer;
  let output = '';
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        output += chunk.toString();
        done();
      },
    });
    server = await startTestServer({}, { logger: pino(loggerOptions('trace') as pino.LoggerOptions, sink) });
  });
  afterAll(() => server.close());

  it('logs a full sign-in, its failures and its tokens without any secret, code or token', async () => {
    const { client, agent, code, verifier } = await signInToCode(server);
    const tokens = (await exchangeCode(server, client, code, verifier)).json();
    await userinfo(server, tokens.access_token);
    await introspect(server, client, tokens.access_token);
    const rotated = (await refresh(server, client, tokens.refresh_token)).json();
    const retried = (await refresh(server, client, tokens.refresh_token)).json(); // a retry within the reuse interval
    await refresh(server, client, rotated.refresh_token); // the discarded successor: reuse, logged as a failure
    await revoke(server, client, retried.refresh_token);
    await exchangeCode(server, client, code, verifier); // replay
    await exchangeCode(server, { ...client, client_secret: 'wrong' }, code, verifier);
    const other = await startAuthorize(server, client);
    await agentAuthenticate(server, { request_id: other.requestId, agent_id: agent.agent_id, agent_secret: `${agent.agent_secret}x` });

    // the run was logged (requests carry their id), so an absence below means something
    expect(output).toContain('"reqId"');
    const secrets = [
      client.client_secret,
      agent.agent_secret,
      code,
      verifier,
      tokens.access_token,
      tokens.refresh_token,
      rotated.access_token,
      rotated.refresh_token,
      retried.access_token,
      retried.refresh_token,
      ADMIN_TOKEN,
      other.cookie!.split('=')[1],
    ];
    for (const secret of secrets) expect(output).not.toContain(secret);
    // nor their distinctive prefixes, which would mean a partial leak
    expect(output).not.toMatch(/aa_(cs|as|code|rt)_[A-Za-z0-9_-]{8}/);
  });

  it('logs the SQLSTATE of a store failure, and a run of identical failures as a few lines', async () => {
    // Every new sign-in fails as if the backend had been terminated (SQLSTATE 57P01).
    await server.services.db.exec(`
      CREATE FUNCTION fail_sign_in() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'terminating connection due to administrator command' USING ERRCODE = 'admin_shutdown'; END $$;
      CREATE TRIGGER fail_sign_in BEFORE INSERT ON auth_requests FOR EACH ROW EXECUTE FUNCTION fail_sign_in();`);
    const client = await server.createClient();
    const before = output.length;
    try {
      for (let i = 0; i < 100; i++) expect((await startAuthorize(server, client)).res.statusCode).toBe(503);
    } finally {
      await server.services.db.exec('DROP TRIGGER fail_sign_in ON auth_requests; DROP FUNCTION fail_sign_in();');
    }
    const warnings = output
      .slice(before)
      .split('\n')
      .filter((line) => line.includes('"msg":"store unavailable"'));
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings.length).toBeLessThanOrEqual(5);
    expect(warnings[0]).toContain('"code":"57P01"');
    expect(output).not.toContain('"code":"[redacted]"');
  });
});
