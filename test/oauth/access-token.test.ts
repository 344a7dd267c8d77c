import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { keyringFrom } from '../../src/crypto/keyring.js';
import { signAccessToken } from '../../src/oauth/access-token.js';
import { VerifiedAccessTokens } from '../../src/tokens/verified-access-tokens.js';
import { introspect, issueTokens, userinfo } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** A token with one character of its signature changed (not the last, whose low bits are unused). */
const altered = (token: string) => {
  const [head, body, signature] = token.split('.');
  return `${head}.${body}.${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`;
};

describe.each([
  { size: '10000', what: 'with the memory of verified tokens' },
  { size: '0', what: 'with GRANT_CACHE_SIZE=0 (nothing remembered)' },
])(`access tokens that passed once, $what (${storeName})`, ({ size }) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ GRANT_CACHE_SIZE: size, ACCESS_TOKEN_TTL_SECONDS: '60' });
  });
  afterAll(() => server.close());
  afterEach(() => void vi.useRealTimers());

  it('are refused once they expire, at /userinfo and at /introspect', async () => {
    const { client, access_token } = await issueTokens(server);
    expect((await userinfo(server, access_token)).statusCode).toBe(200);
    expect((await introspect(server, client, access_token)).json()).toMatchObject({ active: true });

    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 61_000 });
    expect((await userinfo(server, access_token)).statusCode).toBe(401);
    expect((await introspect(server, client, access_token)).json()).toEqual({ active: false });
  });

  it('do not vouch for a token that differs from them by one character', async () => {
    const { client, access_token } = await issueTokens(server);
    expect((await userinfo(server, access_token)).statusCode).toBe(200);
    expect((await userinfo(server, altered(access_token))).statusCode).toBe(401);
    expect((await introspect(server, client, altered(access_token))).json()).toEqual({ active: false });
    expect((await userinfo(server, access_token)).statusCode).toBe(200);
  });
});

describe('the access tokens a process has verified', () => {
  const config = { issuer: 'https://as.example', ttl: { accessToken: 300 } } as never;
  const old = keyringFrom(['old-secret-that-is-at-least-32-bytes-long']);
  const grant = { grant_id: 'grant_a', agent_id: 'agent_a', client_id: 'client_a', scope: 'email', model: 'm' };
  const verified = (keyring: ReturnType<typeof keyringFrom>) => new VerifiedAccessTokens({ config, keyring }, 100);

  it('remembers a token for the keys that verified it only: a keyring without its key refuses it', () => {
    const { token } = signAccessToken({ config, keyring: old }, grant);
    expect(verified(old).verify(token)?.claims).toMatchObject({ sub: 'agent_a' });
    expect(verified(keyringFrom(['new-secret-that-is-at-least-32-bytes-long'])).verify(token)).toBeUndefined();
    const rotated = keyringFrom(['new-secret-that-is-at-least-32-bytes-long', 'old-secret-that-is-at-least-32-bytes-long']);
    expect(verified(rotated).verify(token)?.claims).toMatchObject({ sub: 'agent_a' });
  });

  it('hands out claims that cannot be changed, since later checks of the token share them', () => {
    const { token } = signAccessToken({ config, keyring: old }, grant);
    const tokens = verified(old);
    const { claims } = tokens.verify(token)!;
    expect(() => Object.assign(claims, { sub: 'agent_b' })).toThrow(TypeError);
    expect(tokens.verify(token)?.claims).toMatchObject({ sub: 'agent_a' });
  });
});
