import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate, complete, deny, loadBrowserSignIn, start, status, tryComplete } from '../../src/agent-sign-in/sign-in.js';
import { loadConfig } from '../../src/config.js';
import type { EventName, EventPayloads } from '../../src/events/catalogue.js';
import type { EventContext } from '../../src/events/emitter.js';
import type { Log } from '../../src/logger.js';
import { openServices, type Services } from '../../src/services.js';
import { createTestDatabase, storeName } from '../helpers/database.js';
import { newSignIn } from '../helpers/services.js';

/**
 * The sign-in state machine called directly, without HTTP (src/agent-sign-in/sign-in.ts): the same store the
 * server runs on, the flow's functions given plain values. The HTTP tests beside this one drive the
 * same transitions through the routes.
 */
describe(`the sign-in flow without HTTP (${storeName})`, () => {
  let services: Services;
  let release: () => Promise<void>;
  let client: { client_id: string; redirect_uris: string[] };
  let agent: { agent_id: string; agent_secret: string };

  /** Every event emitted, and every line logged through the context the flow was given. */
  const emitted: { name: EventName; event: unknown }[] = [];
  const lines: { level: string; line: unknown }[] = [];
  const recorder = (level: string) => (line: unknown) => void lines.push({ level, line });
  const log = {
    fatal: recorder('fatal'),
    error: recorder('error'),
    warn: recorder('warn'),
    info: recorder('info'),
    debug: recorder('debug'),
    trace: recorder('trace'),
  };
  const context: EventContext = { log: log as unknown as Log };
  const eventsOf = (requestId: string) =>
    emitted.filter(({ event }) => (event as { request_id?: string }).request_id === requestId).map(({ name }) => name);

  beforeAll(async () => {
    const database = await createTestDatabase();
    const config = loadConfig({ DATA_DIR: 'memory', ADMIN_TOKEN: 'test-admin-token-0123456789abcdef', ISSUER: 'https://auth.example' });
    services = await openServices(config, await database.open());
    release = async () => {
      await services.db.close();
      await database.drop();
    };
    const names: EventName[] = [
      'sign-in.started',
      'sign-in.authenticated',
      'sign-in.completed',
      'sign-in.denied',
      'sign-in.expired',
      'agent.authentication_failed',
    ];
    for (const name of names) services.events.on(name, (event: EventPayloads[EventName]) => void emitted.push({ name, event }));
    client = await services.store.clients.create({ name: 'Shop', redirect_uris: ['https://shop.example/callback?tab=1'] });
    agent = await services.store.agents.create({ email: 'owner@example.com', name: 'Agent' });
  });
  afterAll(() => release());

  async function started(overrides: { login_hint?: string } = {}) {
    const signIn = await start(services, newSignIn(client, { login_hint: overrides.login_hint }), context);
    return { requestId: signIn.id, secret: signIn.bindingSecret };
  }
  const proof = (requestId: string, extra: Partial<Parameters<typeof authenticate>[1]> = {}) => ({
    requestId,
    agentId: agent.agent_id,
    credential: { secret: agent.agent_secret },
    model: 'model-1',
    ...extra,
  });
  const expire = (requestId: string) =>
    services.db.query(`UPDATE auth_requests SET expires_at = now() - interval '1 second' WHERE id = $1`, [requestId]);

  it('moves pending -> authenticated -> completed, emitting each step once', async () => {
    const { requestId, secret } = await started();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await status(services, requestId, context)).toEqual({ status: 'pending' });
    // The browser may not collect anything before the agent has come.
    expect(await tryComplete(services, { requestId, secret }, context)).toBeUndefined();

    expect(await authenticate(services, proof(requestId), context)).toEqual({
      status: 'authenticated',
      request_id: requestId,
      client_id: client.client_id,
      client_name: 'Shop',
      redirect_origin: 'https://shop.example',
    });
    // Repeating the same call is harmless and changes nothing.
    expect((await authenticate(services, proof(requestId), context)).status).toBe('authenticated');
    expect(await status(services, requestId, context)).toEqual({ status: 'authenticated' });

    const location = new URL((await tryComplete(services, { requestId, secret }, context))!);
    expect(`${location.origin}${location.pathname}`).toBe('https://shop.example/callback');
    expect(Object.fromEntries(location.searchParams)).toEqual({
      tab: '1',
      code: expect.stringMatching(/^aa_code_/),
      state: 'st4te',
      iss: 'https://auth.example',
    });
    expect(await status(services, requestId, context)).toEqual({ status: 'completed' });
    // Its browser back before the code was redeemed (the answer was lost) gets a fresh code, and the
    // sign-in still completed once.
    const again = new URL(await complete(services, { requestId, secret }, context));
    expect(again.searchParams.get('code')).not.toBe(location.searchParams.get('code'));

    expect(eventsOf(requestId)).toEqual(['sign-in.started', 'sign-in.authenticated', 'sign-in.completed']);
    expect(
      emitted.find(({ name, event }) => name === 'sign-in.completed' && (event as { request_id: string }).request_id === requestId)?.event,
    ).toEqual({
      request_id: requestId,
      client_id: client.client_id,
      agent_id: agent.agent_id,
      model: 'model-1',
    });
    // The audit log lines went through the caller's logger, and the table has the rows (triggers).
    const audited = lines.filter(({ line }) => (line as { audit?: { request_id?: string } }).audit?.request_id === requestId);
    expect(audited.map(({ line }) => (line as { audit: { event: string } }).audit.event)).toEqual([
      'authorize_started',
      'agent_authenticated',
      'completed',
    ]);
    const rows = await services.store.auditLog.list({ requestId, limit: 10 });
    expect(rows.map((r) => r.event).reverse()).toEqual(['authorize_started', 'agent_authenticated', 'completed']);
  });

  it('hands the sign-in only to the browser holding its secret', async () => {
    const { requestId, secret } = await started();
    const { secret: otherBrowser } = await started();
    for (const presented of [undefined, otherBrowser]) {
      await expect(loadBrowserSignIn(services, requestId, presented, context)).rejects.toMatchObject({
        error: 'invalid_request',
        description: 'this sign-in was started in another browser; start again from the website',
      });
    }
    expect((await loadBrowserSignIn(services, requestId, secret, context)).details).toMatchObject({
      id: requestId,
      status: 'pending',
      client_name: 'Shop',
    });

    await authenticate(services, proof(requestId), context);
    expect(await tryComplete(services, { requestId, secret: otherBrowser }, context)).toBeUndefined();
    expect(await status(services, requestId, context)).toEqual({ status: 'authenticated' });
  });

  it('lets the person deny an authenticated sign-in: the website hears access_denied', async () => {
    const { requestId, secret } = await started();
    await expect(deny(services, { requestId, secret }, context)).rejects.toMatchObject({ error: 'invalid_request' });
    await authenticate(services, proof(requestId), context);
    const location = new URL(await deny(services, { requestId, secret }, context));
    expect(Object.fromEntries(location.searchParams)).toMatchObject({ error: 'access_denied', state: 'st4te', iss: 'https://auth.example' });
    expect(await status(services, requestId, context)).toEqual({
      status: 'error',
      error: 'access_denied',
      error_description: 'this sign-in was denied',
    });
    await expect(authenticate(services, proof(requestId), context)).rejects.toMatchObject({ error: 'access_denied', statusCode: 403 });
    expect(eventsOf(requestId)).toEqual(['sign-in.started', 'sign-in.authenticated', 'sign-in.denied', 'agent.authentication_failed']);
  });

  it('refuses agents with the reason kept for the audit log only', async () => {
    const { requestId } = await started();
    await expect(authenticate(services, proof(requestId, { credential: { secret: 'aa_as_wrong' } }), context)).rejects.toMatchObject({
      error: 'invalid_credentials',
      statusCode: 401,
    });
    await expect(authenticate(services, proof(requestId, { expectedOrigin: 'https://other.example' }), context)).rejects.toMatchObject({
      error: 'redirect_origin_mismatch',
    });
    // Neither refusal moved the sign-in.
    expect(await status(services, requestId, context)).toEqual({ status: 'pending' });
    const other = await services.store.agents.create({ email: 'other@example.com' });
    await authenticate(services, proof(requestId), context);
    await expect(
      authenticate(services, proof(requestId, { agentId: other.agent_id, credential: { secret: other.agent_secret } }), context),
    ).rejects.toMatchObject({
      error: 'request_already_authenticated',
      statusCode: 409,
    });
    const reserved = await started({ login_hint: other.agent_id });
    await expect(authenticate(services, proof(reserved.requestId), context)).rejects.toMatchObject({ error: 'access_denied', statusCode: 403 });
    await expect(authenticate(services, proof('req_unknown'), context)).rejects.toMatchObject({ error: 'not_found', statusCode: 404 });

    const reasons = emitted
      .filter(({ name }) => name === 'agent.authentication_failed')
      .map(({ event }) => event as EventPayloads['agent.authentication_failed'])
      .filter((e) => [requestId, reserved.requestId, 'req_unknown'].includes(e.request_id))
      .map((e) => e.reason);
    expect(reasons).toEqual(['wrong_secret', 'wrong_website', 'request_taken', 'login_hint_mismatch', 'request_not_found']);
    const rows = await services.store.auditLog.list({ requestId, event: 'agent_authentication_failed', limit: 10 });
    expect(rows.map((r) => r.reason).reverse()).toEqual(['wrong_secret', 'wrong_website', 'request_taken']);
  });

  it('notices an expiry once, however often it is read afterwards', async () => {
    const { requestId, secret } = await started();
    await authenticate(services, proof(requestId), context);
    await expire(requestId);
    const expired = { status: 'error', error: 'request_expired', error_description: 'the authorization request has expired' };
    expect(await status(services, requestId, context)).toEqual(expired);
    expect(await status(services, requestId, context)).toEqual(expired);
    await expect(loadBrowserSignIn(services, requestId, secret, context)).rejects.toMatchObject({ error: 'request_expired' });
    expect(await tryComplete(services, { requestId, secret }, context)).toBeUndefined();
    expect(eventsOf(requestId).filter((name) => name === 'sign-in.expired')).toHaveLength(1);
  });

  it('holds a long poll until the state changes, and answers at once when told to stop', async () => {
    const { requestId } = await started();
    const stop = new AbortController();
    const waiting = status(services, requestId, context, { waitMs: 10_000, stop: stop.signal });
    await authenticate(services, proof(requestId), context);
    expect(await waiting).toEqual({ status: 'authenticated' });

    const held = status(services, requestId, context, { waitMs: 10_000, stop: stop.signal });
    const begun = Date.now();
    stop.abort();
    expect(await held).toEqual({ status: 'authenticated' });
    expect(Date.now() - begun).toBeLessThan(5_000);
  });
});
