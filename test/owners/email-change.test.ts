import { describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { serverWithMail, signInOwner, useLink } from '../helpers/owner.js';
import { ISSUER } from '../helpers/server.js';
import { linkIn } from '../helpers/smtp.js';

const fresh = () => `owner-${Math.random().toString(36).slice(2)}@example.com`;
const pathOf = (link: string) => {
  const url = new URL(link);
  return url.pathname + url.search;
};

describe(`owners change their email address (${storeName})`, () => {
  const started = serverWithMail();

  it('moves the account once a link to the new address is used, verified; the old address is told', async () => {
    const { server, smtp } = started;
    const [before, after] = [fresh(), fresh()];
    const owner = await signInOwner(server.app, smtp, before);
    const asked = await owner.call('POST', '/account/api/me/email', { email: after });
    expect(asked.statusCode).toBe(202);
    expect(asked.json()).toEqual({});
    // Nothing changes until the new address is proved: the account keeps its verified address.
    expect((await owner.call('GET', '/account/api/me')).json()).toMatchObject({ email: before, email_verified: true });

    const mail = await smtp.next(after);
    expect(mail.subject).toContain('Confirm your new email address');
    const used = await useLink(server.app, pathOf(linkIn(mail)));
    expect(used.statusCode).toBe(303);
    expect((await owner.call('GET', '/account/api/me')).json()).toMatchObject({ email: after, email_verified: true });
    const told = await smtp.next(before);
    expect(told.subject).toContain('moved to another email address');
    expect(told.text).toContain(after);
    const audit = (await server.adminCall('GET', `/admin/audit?email=${encodeURIComponent(after)}&event=owner_email_changed`)).json.events;
    expect(audit[0]).toMatchObject({ actor: 'owner' });
    // The link is spent like any other.
    expect((await useLink(server.app, pathOf(linkIn(mail)))).statusCode).toBe(400);
  });

  it('answers alike for an address another account has, and the link then moves nothing', async () => {
    const { server, smtp } = started;
    const taken = fresh();
    await signInOwner(server.app, smtp, taken);
    const owner = await signInOwner(server.app, smtp, fresh());
    const free = await owner.call('POST', '/account/api/me/email', { email: fresh() });
    const busy = await owner.call('POST', '/account/api/me/email', { email: taken });
    expect([busy.statusCode, busy.body]).toEqual([free.statusCode, free.body]);
    const refused = await useLink(server.app, pathOf(linkIn(await smtp.next(taken))));
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('email_taken');
    expect(refused.cookies.filter((c) => c.value)).toEqual([]);
    expect((await owner.call('GET', '/account/api/me')).json().email).not.toBe(taken);
  });

  it('needs a sign-in of the last 5 minutes, a session, and an email address', async () => {
    const { server, smtp } = started;
    const email = fresh();
    const owner = await signInOwner(server.app, smtp, email);
    await server.services.db.query(
      `UPDATE owner_sessions SET authenticated_at = now() - interval '6 minutes'
       WHERE user_id = (SELECT id FROM users WHERE lower(email) = lower($1))`,
      [email],
    );
    const target = fresh();
    const stale = await owner.call('POST', '/account/api/me/email', { email: target });
    expect(stale.statusCode).toBe(403);
    expect(stale.json().error).toBe('fresh_authentication_required');
    await expect(smtp.next(target, 300)).rejects.toThrow(/no mail/);

    for (const payload of [{}, { email: 'not an address' }, { email: target, extra: 1 }, { email: 5 }]) {
      const res = await (await signInOwner(server.app, smtp, email)).call('POST', '/account/api/me/email', payload);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('invalid_request');
    }
    const anonymous = await server.app.inject({
      method: 'POST',
      url: '/account/api/me/email',
      headers: { 'content-type': 'application/json', origin: ISSUER },
      payload: JSON.stringify({ email: target }),
    });
    expect(anonymous.statusCode).toBe(401);
  });
});

describe(`owners change their email address: limits (${storeName})`, () => {
  const started = serverWithMail({ RATE_LIMIT_EMAIL_LINK_PER_IP: '3' });

  it('shares the budget per client address of asking for sign-in links', async () => {
    const { server, smtp } = started;
    // One link asked for to sign in, two changes asked for: the address's three.
    const owner = await signInOwner(server.app, smtp, fresh());
    for (let i = 0; i < 2; i++) expect((await owner.call('POST', '/account/api/me/email', { email: fresh() })).statusCode).toBe(202);
    const refused = await owner.call('POST', '/account/api/me/email', { email: fresh() });
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toBe('rate_limited');
    expect((await server.app.inject({ method: 'POST', url: '/account/email-link', payload: { email: fresh() } })).statusCode).toBe(429);
  });
});
