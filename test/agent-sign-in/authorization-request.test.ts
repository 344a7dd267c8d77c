import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AuthorizeQuery,
  checkAuthorization,
  checkDpopJkt,
  checkLoginHint,
  checkNonce,
  checkPkce,
  checkRedirectUri,
  checkResponseType,
  checkScope,
  optional,
  required,
} from '../../src/agent-sign-in/authorization-request.js';
import type { Services } from '../../src/services.js';
import type { Client } from '../../src/store/clients.js';
import { storeName } from '../helpers/database.js';
import { pkce } from '../helpers/flow.js';
import { openTestServices } from '../helpers/services.js';

/** The error a step throws, as `{error, error_description}` (undefined when it passes). */
function refusal(step: () => unknown) {
  try {
    step();
    return undefined;
  } catch (err) {
    const { error, description } = err as { error: string; description: string };
    return { error, description };
  }
}

/**
 * The rules of GET /authorize, step by step and without HTTP (src/agent-sign-in/authorization-request.ts):
 * test/routes/authorize.test.ts drives the same rules through the route and its pages.
 */
describe('the checks of an authorization request, one by one', () => {
  const registered = { client_id: 'client_x', redirect_uris: ['https://shop.example/cb'], registration: 'admin' } as Client;
  const native = { ...registered, registration: 'dynamic', redirect_uris: ['http://127.0.0.1/cb'] } as Client;

  it('takes each parameter once, within its length, and requires the required ones', () => {
    expect(refusal(() => optional({ state: ['a', 'b'] }, 'state'))?.description).toBe('the state parameter must not be repeated');
    expect(refusal(() => optional({ scope: 'x'.repeat(501) }, 'scope'))?.description).toBe('the scope parameter is too long');
    expect(optional({}, 'scope')).toBeUndefined();
    expect(refusal(() => required({ state: '' }, 'state'))).toEqual({ error: 'invalid_request', description: 'the state parameter is required' });
    expect(required({ state: 's' }, 'state')).toBe('s');
  });

  it('accepts only a registered redirect URI; native clients any loopback port', () => {
    expect(checkRedirectUri(registered, { redirect_uri: 'https://shop.example/cb' })).toBe('https://shop.example/cb');
    expect(refusal(() => checkRedirectUri(registered, { redirect_uri: 'https://shop.example/cb/' }))?.error).toBe('invalid_request');
    expect(checkRedirectUri(native, { redirect_uri: 'http://127.0.0.1:8123/cb' })).toBe('http://127.0.0.1:8123/cb');
    expect(refusal(() => checkRedirectUri(registered, { redirect_uri: 'https://shop.example:8443/cb' }))?.error).toBe('invalid_request');
  });

  it('asks for the code flow with PKCE S256 only', () => {
    expect(refusal(() => checkResponseType({ response_type: 'token' }))?.error).toBe('unsupported_response_type');
    expect(refusal(() => checkResponseType({ response_type: 'code' }))).toBeUndefined();
    const { challenge } = pkce();
    expect(checkPkce({ code_challenge: challenge, code_challenge_method: 'S256' })).toBe(challenge);
    expect(refusal(() => checkPkce({ code_challenge: 'short', code_challenge_method: 'S256' }))?.error).toBe('invalid_request');
    expect(refusal(() => checkPkce({ code_challenge: challenge, code_challenge_method: 'plain' }))?.description).toBe(
      'code_challenge_method must be S256',
    );
  });

  it('defaults the scope, refuses unknown ones, and keeps to a resource’s own', () => {
    expect(checkScope({}, undefined)).toBe('openid email profile');
    expect(refusal(() => checkScope({ scope: 'openid admin' }, undefined))?.error).toBe('invalid_scope');
    const resource = { resource: 'https://mcp.example', name: 'MCP', scopes: ['files:read'] } as Parameters<typeof checkScope>[1];
    expect(checkScope({ scope: 'files:read' }, resource)).toBe('files:read');
  });

  it('takes an agent id as login_hint, and the agent its own document names', () => {
    const deps = { config: { issuer: 'https://auth.example', idTokenSigningAlg: undefined } } as Parameters<typeof checkLoginHint>[0];
    expect(checkLoginHint(deps, registered, { login_hint: 'agent_1' })).toBe('agent_1');
    expect(refusal(() => checkLoginHint(deps, registered, { login_hint: 'a b' }))?.description).toBe('login_hint must be an agent id');
    const own = { ...registered, client_id: 'https://auth.example/agents/agent_7/client-metadata.json' } as Client;
    expect(checkLoginHint(deps, own, { login_hint: 'agent_1' })).toBe('agent_7');
  });

  it('reads nonce in OpenID Connect mode only, and dpop_jkt as a thumbprint', () => {
    const plain = { config: { issuer: 'https://auth.example', idTokenSigningAlg: undefined } } as Parameters<typeof checkNonce>[0];
    const oidc = { config: { issuer: 'https://auth.example', idTokenSigningAlg: 'RS256' } } as Parameters<typeof checkNonce>[0];
    expect(checkNonce(plain, { nonce: 'n' })).toBeUndefined();
    expect(checkNonce(oidc, { nonce: 'n' })).toBe('n');
    expect(checkDpopJkt({ dpop_jkt: 'A'.repeat(43) })).toBe('A'.repeat(43));
    expect(refusal(() => checkDpopJkt({ dpop_jkt: 'A'.repeat(42) }))?.error).toBe('invalid_request');
  });
});

describe(`the checks of an authorization request, in order (${storeName})`, () => {
  let services: Services;
  let close: () => Promise<void>;
  let valid: AuthorizeQuery;

  beforeAll(async () => {
    ({ services, close } = await openTestServices());
    const client = await services.store.clients.create({ name: 'Shop', redirect_uris: ['https://shop.example/cb'] });
    await services.store.resources.create({ resource: 'https://mcp.example', name: 'MCP', scopes: ['files:read'] });
    valid = {
      client_id: client.client_id,
      redirect_uri: 'https://shop.example/cb',
      response_type: 'code',
      state: 'st',
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
    };
  });
  afterAll(() => close());

  const outcome = async (query: AuthorizeQuery) => {
    try {
      return await checkAuthorization(services, query);
    } catch (err) {
      return { refused: (err as { error: string }).error };
    }
  };

  it('reads the client from the store: unknown is invalid_client, before anything else is looked at', async () => {
    expect(await outcome({ client_id: 'client_nope' })).toEqual({ refused: 'invalid_client' });
    expect(await outcome({ ...valid, redirect_uri: undefined, response_type: 'token' })).toEqual({ refused: 'invalid_request' });
  });

  it('sends an unknown resource back to the website once the redirect URI and state are good', async () => {
    const answer = await outcome({ ...valid, resource: 'https://unknown.example' });
    expect(answer).toEqual({ redirect: expect.stringMatching(/^https:\/\/shop\.example\/cb\?error=invalid_target&.*state=st/) });
    expect(await outcome({ ...valid, state: undefined, resource: 'https://unknown.example' })).toEqual({ refused: 'invalid_request' });
  });

  it('gives what the sign-in records for a good request', async () => {
    const answer = await outcome({ ...valid, resource: 'https://mcp.example', scope: 'files:read' });
    expect(answer).toMatchObject({
      resource: { name: 'MCP' },
      signIn: { client_id: valid.client_id, scope: 'files:read', resource: 'https://mcp.example', login_hint: null, nonce: null, dpop_jkt: null },
    });
  });
});
