import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { closeServerWithMail, cookiesOf, linkForm, mailedLink, signInOwner, startServerWithMail, useLink } from '../helpers/owner.js';
import { ISSUER, startSecondInstance, startTestServer, type TestServer } from '../helpers/server.js';
import { linkIn, startSmtp, type TestSmtp } from '../helpers/smtp.js';

const fresh = () => `owner-${Math.random().toString(36).slice(2)}@example.com`;

describe(`owners sign in by email link (${storeName})`, () => {
  let smtp: TestSmtp;
  let server: TestServer;
  beforeAll(async () => ({ smtp, server } = await startServerWithMail({ RATE_LIMIT_EMAIL_LINK_PER_IP: '1000' })));
  afterAll(() => closeServerWithMail({ smtp, server }));

  it('mails one link that a GET never spends and the page’s form uses once, verifying the email', async () => {
    const email = fresh();
    const asked = await server.app.inject({ method: 'POST', url: '/account/email-link', payload: { email } });
    expect(asked.statusCode).toBe(202);
    expect(asked.json()).toEqual({});
    const mail = await smtp.next(email);
    expect(mail.subject).toContain('sign-in link');
    const link = /http:\/\/localhost:3000\/account\/email-link\/callback\?token=[\w-]{43}/.exec(mail.text)?.[0];
    expect(link).toBeDefined();
    expect(mail.html).toContain(link);

    const path = link!.slice(ISSUER.length);
    // Stored as its SHA-256 only, good for 15 minutes.
    const token = path.split('token=')[1];
    const { rows } = await server.services.db.query<Record<string, unknown>>(
      `SELECT *, extract(epoch FROM expires_at - created_at)::int AS lifetime FROM owner_email_links WHERE lower(email) = lower($1)`,
      [email],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ token_hash: createHash('sha256').update(token).digest('base64url'), lifetime: 15 * 60 });
    expect(JSON.stringify(rows)).not.toContain(token);
    // A mail scanner opens it: nothing spent, no session.
    for (let i = 0; i < 2; i++) {
      const page = await server.app.inject({ url: path });
      expect(page.statusCode).toBe(200);
      expect(page.headers['cache-control']).toBe('no-store');
      expect(page.headers['content-security-policy']).toMatch(/default-src 'none'/);
      expect(page.cookies.map((c) => c.name)).toEqual(['agent_auth_owner_link']);
      expect(linkForm(page.body).token).toBe(path.split('token=')[1]);
    }
    const used = await useLink(server.app, path);
    expect(used.statusCode).toBe(303);
    expect(used.headers.location).toBe('/account');
    const session = used.cookies.find((c) => c.name === 'agent_auth_owner');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    expect(session!.secure).toBeFalsy();

    const me = await server.app.inject({ url: '/account/api/me', headers: { cookie: `agent_auth_owner=${session!.value}` } });
    expect(me.statusCode).toBe(200);
    expect(me.headers['cache-control']).toBe('no-store');
    expect(me.json()).toEqual({ email, email_verified: true, approval_policy: 'never', notify_new_website: true, passkeys: [] });

    // Used once: the page and the form both refuse it now, without a cookie.
    expect((await server.app.inject({ url: path })).statusCode).toBe(400);
    const again = await useLink(server.app, path);
    expect(again.statusCode).toBe(400);
    expect(again.headers['content-type']).toMatch(/text\/html/);
    expect(again.cookies.filter((c) => c.name === 'agent_auth_owner')).toEqual([]);
  });

  it('verifies an operator-registered owner, and links them to their existing user', async () => {
    const agent = await server.createAgent();
    const owner = await signInOwner(server.app, smtp, agent.email.toUpperCase());
    const me = (await owner.call('GET', '/account/api/me')).json();
    expect(me).toMatchObject({ email: agent.email, email_verified: true });
  });

  it('refuses an expired, unknown or malformed link with a page and no cookie', async () => {
    const email = fresh();
    const path = await mailedLink(server.app, smtp, email);
    await server.services.db.query(`UPDATE owner_email_links SET expires_at = now() - interval '1 second' WHERE lower(email) = lower($1)`, [email]);
    for (const url of [path, '/account/email-link/callback?token=' + 'A'.repeat(43), '/account/email-link/callback?token=short']) {
      const res = await server.app.inject({ url });
      expect(res.statusCode).toBe(400);
      expect(res.headers['content-type']).toMatch(/text\/html/);
      expect(res.cookies).toEqual([]);
    }
    expect((await useLink(server.app, path)).statusCode).toBe(400);
  });

  it('answers every well-formed address alike, in the same time, and refuses the rest', async () => {
    const known = (await server.createAgent()).email;
    const timed = async (email: string) => {
      const start = process.hrtime.bigint();
      const res = await server.app.inject({ method: 'POST', url: '/account/email-link', payload: { email } });
      return { res, ms: Number(process.hrtime.bigint() - start) / 1e6 };
    };
    const [a, b] = [await timed(known), await timed(fresh())];
    expect([a.res.statusCode, b.res.statusCode]).toEqual([202, 202]);
    expect(a.res.body).toBe(b.res.body);
    expect(Object.keys(a.res.headers).sort()).toEqual(Object.keys(b.res.headers).sort());
    // Medians over alternating tries (sending the mail is never awaited), each with an address not
    // asked for before: a registered owner and an address no one owns take comparable time. The
    // bound is generous (a shared machine is noisy); a lookup that skipped work for one side would
    // still show as a steady ratio far from 1 over many runs.
    const TRIES = 9;
    const owners = await Promise.all(Array.from({ length: TRIES }, async () => (await server.createAgent()).email));
    const times = { known: [] as number[], unknown: [] as number[] };
    for (let i = 0; i < TRIES; i++) {
      const known = await timed(owners[i]);
      const unknown = await timed(fresh());
      expect([known.res.statusCode, unknown.res.statusCode]).toEqual([202, 202]);
      times.known.push(known.ms);
      times.unknown.push(unknown.ms);
    }
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    const ratio = median(times.known) / median(times.unknown);
    expect(ratio, `known ${times.known.map(Math.round)} ms, unknown ${times.unknown.map(Math.round)} ms`).toBeGreaterThan(1 / 3);
    expect(ratio, `known ${times.known.map(Math.round)} ms, unknown ${times.unknown.map(Math.round)} ms`).toBeLessThan(3);

    for (const payload of [{}, { email: 'not an address' }, { email: 'x'.repeat(330) + '@example.com' }, { email: 5 }]) {
      const res = await server.app.inject({ method: 'POST', url: '/account/email-link', payload });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('invalid_request');
    }
  });

  it('refuses a link used from another site, or without the page’s cookie (login CSRF)', async () => {
    const path = await mailedLink(server.app, smtp, fresh());
    const page = await server.app.inject({ url: path });
    const post = (headers: Record<string, string>) =>
      server.app.inject({ method: 'POST', url: '/account/email-link/callback', headers, payload: linkForm(page.body) });
    expect((await post({ origin: ISSUER })).statusCode).toBe(403);
    expect((await post({ cookie: cookiesOf(page), origin: 'https://evil.example' })).statusCode).toBe(403);
    expect((await post({ cookie: cookiesOf(page), 'sec-fetch-site': 'cross-site' })).statusCode).toBe(403);
    // Refusals spend nothing: the owner's own browser still signs in with it.
    expect((await post({ cookie: cookiesOf(page), origin: ISSUER })).statusCode).toBe(303);
  });

  it('limits links per email across addresses (429 with Retry-After) only while a link sent still works: an attacker cannot keep the owner out', async () => {
    const victim = fresh();
    const ask = (remoteAddress: string, email = victim) =>
      server.app.inject({ method: 'POST', url: '/account/email-link', remoteAddress, payload: { email } });
    // The attacker, at their own address, spends the address's whole budget for the hour.
    for (let i = 0; i < 5; i++) expect((await ask('127.0.0.2')).statusCode).toBe(202);
    const paths: string[] = [];
    for (let i = 0; i < 5; i++) paths.push(new URL(linkIn(await smtp.next(victim))).search);
    const refused = await ask('127.0.0.2');
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toBe('rate_limited');
    // The wait is until the newest link sent expires (15 minutes), not the hour.
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(14 * 60);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(15 * 60);
    // Another address is untouched.
    expect((await ask('127.0.0.2', fresh())).statusCode).toBe(202);

    // The owner, at their own address, is refused a new link too, but holds working ones: every link the
    // attacker had us send is in the owner's mailbox, and any of them signs the owner in.
    expect((await ask('127.0.0.1')).statusCode).toBe(429);
    expect((await useLink(server.app, `/account/email-link/callback${paths[4]}`)).statusCode).toBe(303);

    // Later, those links have expired (the hour is not over): the owner gets a new link and uses it,
    // and while it is usable the attacker is refused again.
    await server.services.db.query(`UPDATE owner_email_links SET expires_at = now() - interval '1 second' WHERE lower(email) = lower($1)`, [victim]);
    expect((await ask('127.0.0.1')).statusCode).toBe(202);
    const ownersLink = new URL(linkIn(await smtp.next(victim)));
    expect((await ask('127.0.0.2')).statusCode).toBe(429);
    expect((await useLink(server.app, ownersLink.pathname + ownersLink.search)).statusCode).toBe(303);
    // Once it is spent, no link is usable: another may be sent.
    expect((await ask('127.0.0.2')).statusCode).toBe(202);
  });

  it('guards the API: no session is 401, a state change must be JSON from this origin', async () => {
    const owner = await signInOwner(server.app, smtp, fresh());
    expect((await server.app.inject({ url: '/account/api/me' })).json()).toMatchObject({ error: 'login_required' });
    expect((await server.app.inject({ url: '/account/api/me', headers: { cookie: 'agent_auth_owner=' + 'A'.repeat(43) } })).statusCode).toBe(401);
    const patch = (headers: Record<string, string>, payload: string) =>
      server.app.inject({ method: 'PATCH', url: '/account/api/me', headers: { cookie: owner.cookie, ...headers }, payload });
    const body = JSON.stringify({ notify_new_website: false });
    expect((await patch({ 'content-type': 'application/x-www-form-urlencoded' }, 'notify_new_website=false')).statusCode).toBe(415);
    expect((await patch({ 'content-type': 'text/plain' }, body)).statusCode).toBe(415);
    expect((await patch({ 'content-type': 'application/json', origin: 'https://evil.example' }, body)).json()).toMatchObject({ error: 'forbidden' });
    expect((await patch({ 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' }, body)).statusCode).toBe(403);
    expect((await owner.call('GET', '/account/api/me')).json().notify_new_website).toBe(true);

    const changed = await owner.call('PATCH', '/account/api/me', { approval_policy: 'new_website', notify_new_website: false });
    expect(changed.statusCode).toBe(200);
    expect(changed.json()).toMatchObject({ approval_policy: 'new_website', notify_new_website: false });
    for (const bad of [{}, { approval_policy: 'sometimes' }, { notify_new_website: 'no' }, { email: 'x@example.com' }]) {
      const res = await owner.call('PATCH', '/account/api/me', bad);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('invalid_request');
    }
    expect(
      (await server.app.inject({ method: 'PATCH', url: '/account/api/me', headers: { 'content-type': 'application/json' }, payload: body }))
        .statusCode,
    ).toBe(401);
  });

  it('ends sessions: idle, signed out (on every instance), everywhere', async () => {
    const email = fresh();
    const first = await signInOwner(server.app, smtp, email);
    const second = await signInOwner(server.app, smtp, email);
    const other = await startSecondInstance(server);
    try {
      expect((await first.call('GET', '/account/api/me', undefined, other.app)).statusCode).toBe(200);
      const out = await first.call('POST', '/account/sign-out', undefined, other.app);
      expect(out.body).toBe('');
      expect(out.statusCode).toBe(204);
      expect(out.cookies.find((c) => c.name === 'agent_auth_owner')?.value).toBe('');
      expect((await first.call('GET', '/account/api/me')).statusCode).toBe(401);
      expect((await second.call('GET', '/account/api/me')).statusCode).toBe(200);

      await server.services.db.query(`UPDATE owner_sessions SET last_seen_at = now() - interval '2 hours'`);
      expect((await second.call('GET', '/account/api/me', undefined, other.app)).statusCode).toBe(401);

      const third = await signInOwner(server.app, smtp, email);
      const fourth = await signInOwner(server.app, smtp, email);
      expect((await third.call('POST', '/account/sign-out', { everywhere: true })).statusCode).toBe(204);
      expect((await fourth.call('GET', '/account/api/me')).statusCode).toBe(401);
    } finally {
      await other.close();
    }
  });

  it('ends a session at its absolute limit however recently used, and mints a new one at each sign-in (no fixation)', async () => {
    const email = fresh();
    const owner = await signInOwner(server.app, smtp, email);
    expect((await owner.call('GET', '/account/api/me')).statusCode).toBe(200);
    // Seen a moment ago, but past its absolute end (12 hours after sign-in).
    await server.services.db.query(
      `UPDATE owner_sessions SET expires_at = now() - interval '1 second'
       WHERE user_id = (SELECT id FROM users WHERE lower(email) = lower($1))`,
      [email],
    );
    expect((await owner.call('GET', '/account/api/me')).json()).toMatchObject({ error: 'login_required' });

    // A browser that holds a session (planted or its own) and uses a link gets a new session value;
    // the one it held ends, so a value someone else knows is worth nothing afterwards.
    const planted = await signInOwner(server.app, smtp, fresh());
    const path = await mailedLink(server.app, smtp, email);
    const page = await server.app.inject({ url: path, headers: { cookie: planted.cookie } });
    const used = await server.app.inject({
      method: 'POST',
      url: '/account/email-link/callback',
      headers: { cookie: `${planted.cookie}; ${cookiesOf(page)}`, origin: ISSUER },
      payload: linkForm(page.body),
    });
    expect(used.statusCode).toBe(303);
    const minted = used.cookies.find((c) => c.name === 'agent_auth_owner')!.value;
    expect(`agent_auth_owner=${minted}`).not.toBe(planted.cookie);
    expect((await planted.call('GET', '/account/api/me')).statusCode).toBe(401);
    const me = await server.app.inject({ url: '/account/api/me', headers: { cookie: `agent_auth_owner=${minted}` } });
    expect(me.json()).toMatchObject({ email, email_verified: true });
  });

  it('shares sessions between two instances over one database: made on A, used on B, signed out on A ends on B at once', async () => {
    const email = fresh();
    const b = await startSecondInstance(server);
    try {
      // A link mailed by A works on B, and the session it makes works on A.
      const fromB = await useLink(b.app, await mailedLink(server.app, smtp, email));
      expect(fromB.statusCode).toBe(303);
      const madeOnB = cookiesOf(fromB);
      expect((await server.app.inject({ url: '/account/api/me', headers: { cookie: madeOnB } })).json().email).toBe(email);

      const onA = await signInOwner(server.app, smtp, email);
      expect((await onA.call('GET', '/account/api/me', undefined, b.app)).json()).toMatchObject({ email, email_verified: true });
      // What the owner does on B, A sees.
      const created = await onA.call('POST', '/account/api/agents', { name: 'Made on B' }, b.app);
      expect(created.statusCode).toBe(201);
      const listed = (await onA.call('GET', '/account/api/agents')).json().agents;
      expect(listed.map((a: { agent_id: string }) => a.agent_id)).toContain(created.json().agent_id);

      expect((await onA.call('POST', '/account/sign-out')).statusCode).toBe(204);
      // No wait: a session is its row, and every instance reads it on every request.
      const after = await onA.call('GET', '/account/api/me', undefined, b.app);
      expect(after.statusCode).toBe(401);
      expect(after.json().error).toBe('login_required');
      expect((await onA.call('POST', '/account/api/agents', { name: 'x' }, b.app)).statusCode).toBe(401);
      // The other session lives on, on both, until the owner signs out everywhere, here on B.
      expect((await server.app.inject({ url: '/account/api/me', headers: { cookie: madeOnB } })).statusCode).toBe(200);
      const everywhere = await b.app.inject({
        method: 'POST',
        url: '/account/sign-out',
        headers: { cookie: madeOnB, 'content-type': 'application/json', origin: ISSUER },
        payload: JSON.stringify({ everywhere: true }),
      });
      expect(everywhere.statusCode).toBe(204);
      expect((await server.app.inject({ url: '/account/api/me', headers: { cookie: madeOnB } })).statusCode).toBe(401);
    } finally {
      await b.close();
    }
  });

  it('signs out from the portal’s form only with its token', async () => {
    const owner = await signInOwner(server.app, smtp, fresh());
    const home = await server.app.inject({ url: '/account', headers: { cookie: owner.cookie } });
    expect(home.statusCode).toBe(200);
    const token = /name="_csrf" value="([^"]+)"/.exec(home.body)![1];
    const form = (fields: Record<string, string>, origin = ISSUER) =>
      server.app.inject({
        method: 'POST',
        url: '/account/sign-out',
        headers: { cookie: owner.cookie, accept: 'text/html', origin, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams(fields).toString(),
      });
    expect((await form({ _csrf: 'wrong' })).statusCode).toBe(403);
    expect((await form({ _csrf: token }, 'https://evil.example')).statusCode).toBe(403);
    expect((await owner.call('GET', '/account/api/me')).statusCode).toBe(200);
    const out = await form({ _csrf: token });
    expect(out.statusCode).toBe(303);
    expect((await owner.call('GET', '/account/api/me')).statusCode).toBe(401);
  });
});

describe(`owner sign-in settings (${storeName})`, () => {
  let smtp: TestSmtp;
  beforeAll(async () => {
    smtp = await startSmtp();
  });
  afterAll(() => smtp?.close());

  it('without OWNER_SIGNUP mails only owners that exist, with the same answer', async () => {
    const server = await startTestServer({ SMTP_URL: smtp.url, OWNER_SIGNUP: 'false' });
    try {
      const stranger = fresh();
      const res = await server.app.inject({ method: 'POST', url: '/account/email-link', payload: { email: stranger } });
      expect(res.statusCode).toBe(202);
      const agent = await server.createAgent();
      await signInOwner(server.app, smtp, agent.email);
      await expect(smtp.next(stranger, 300)).rejects.toThrow(/no mail/);
    } finally {
      await server.close();
    }
  });

  it('uses a __Host- cookie, Secure, under an https issuer', async () => {
    const server = await startTestServer({ SMTP_URL: smtp.url, ISSUER: 'https://auth.example' });
    try {
      const email = fresh();
      await server.app.inject({ method: 'POST', url: '/account/email-link', payload: { email } });
      const link = new URL(/https:\/\/auth\.example\S+/.exec((await smtp.next(email)).text)![0]);
      const page = await server.app.inject({ url: link.pathname + link.search });
      expect(page.cookies[0]).toMatchObject({ name: '__Host-agent_auth_owner_link', secure: true, path: '/' });
      const used = await server.app.inject({
        method: 'POST',
        url: '/account/email-link/callback',
        headers: { cookie: cookiesOf(page), origin: 'https://auth.example' },
        payload: linkForm(page.body),
      });
      expect(used.statusCode).toBe(303);
      expect(used.cookies.find((c) => c.name === '__Host-agent_auth_owner')).toMatchObject({
        secure: true,
        httpOnly: true,
        sameSite: 'Lax',
        path: '/',
      });
    } finally {
      await server.close();
    }
  });

  it('limits asking for links per client address', async () => {
    const server = await startTestServer({ SMTP_URL: smtp.url, RATE_LIMIT_EMAIL_LINK_PER_IP: '3' });
    try {
      const ask = (remoteAddress: string) =>
        server.app.inject({ method: 'POST', url: '/account/email-link', remoteAddress, payload: { email: fresh() } });
      for (let i = 0; i < 3; i++) expect((await ask('127.0.0.2')).statusCode).toBe(202);
      const refused = await ask('127.0.0.2');
      expect(refused.statusCode).toBe(429);
      expect(refused.headers['retry-after']).toBeDefined();
      expect((await ask('127.0.0.3')).statusCode).toBe(202);
    } finally {
      await server.close();
    }
  });
});
