import type { MailMessage } from './mailer.js';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escape = (value: string) => value.replace(/[&<>"']/g, (c) => ESCAPES[c]);

/** The simple HTML every message shares: paragraphs, one button, the same words as the text. */
function html(paragraphs: string[], button: { label: string; href: string }, after: string[]): string {
  const p = (text: string) => `<p style="margin:0 0 16px">${escape(text)}</p>`;
  return [
    '<!doctype html><html><body style="font-family:system-ui,sans-serif;line-height:1.5;color:#1f2328;max-width:36rem">',
    ...paragraphs.map(p),
    `<p style="margin:0 0 16px"><a href="${escape(button.href)}" style="display:inline-block;padding:10px 18px;background:#1f6feb;color:#ffffff;border-radius:6px;text-decoration:none;font-weight:600">${escape(button.label)}</a></p>`,
    `<p style="margin:0 0 16px;font-size:13px;color:#59636e">${escape(button.href)}</p>`,
    ...after.map(p),
    '</body></html>',
  ].join('\n');
}

/** The email-link sign-in: one link, single use, for `minutes`. */
export function signInLinkMessage(input: { to: string; brand: string; link: string; minutes: number }): MailMessage {
  const intro = [`Someone, hopefully you, asked to sign in to ${input.brand} with this email address.`];
  const after = [
    `The link works once, within ${input.minutes} minutes. If you did not ask for it, ignore this mail: nothing happens without the link.`,
  ];
  return {
    to: input.to,
    subject: `Your sign-in link for ${input.brand}`,
    text: [...intro, '', `Sign in: ${input.link}`, '', ...after, ''].join('\n'),
    html: html(intro, { label: `Sign in to ${input.brand}`, href: input.link }, after),
  };
}

/** An owner asked to move their account to this address: the link proves it and makes the move. */
export function emailChangeLinkMessage(input: { to: string; brand: string; link: string; minutes: number }): MailMessage {
  const intro = [`Someone signed in to ${input.brand} asked to use this email address for their account from now on.`];
  const after = [
    `The link works once, within ${input.minutes} minutes. If you did not ask for it, ignore this mail: nothing changes without the link.`,
  ];
  return {
    to: input.to,
    subject: `Confirm your new email address for ${input.brand}`,
    text: [...intro, '', `Use this address: ${input.link}`, '', ...after, ''].join('\n'),
    html: html(intro, { label: 'Use this address', href: input.link }, after),
  };
}

/** Told to the address an owner's account just left, in case it was not the owner who moved it. */
export function emailChangedMessage(input: { to: string; brand: string; newEmail: string; link: string }): MailMessage {
  const intro = [
    `The ${input.brand} account of this email address now uses ${input.newEmail}; sign-in links go there from now on.`,
    'If you did not change it, someone holds a session of your account: ask your operator to restore the address, and sign out everywhere.',
  ];
  return {
    to: input.to,
    subject: `Your ${input.brand} account moved to another email address`,
    text: [...intro, '', `Your account: ${input.link}`, ''].join('\n'),
    html: html(intro, { label: 'Your account', href: input.link }, []),
  };
}

/** An agent signed in to a website for the first time: what, where, when, and where to revoke it. */
export function newWebsiteMessage(input: {
  to: string;
  brand: string;
  agent: string;
  website: string;
  origin: string;
  model: string;
  at: Date;
  link: string;
}): MailMessage {
  const when = `${input.at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const intro = [
    `Your agent ${input.agent} signed in to ${input.website} (${input.origin}) for the first time, on ${when}, as ${input.model}.`,
    'If that was not meant to happen, revoke it in your account: the website loses access at once.',
  ];
  const after = ['You get this mail once per agent and website. You can turn these mails off in your account’s settings.'];
  return {
    to: input.to,
    subject: `${input.agent} signed in to ${input.website}`,
    text: [...intro, '', `Your account: ${input.link}`, '', ...after, ''].join('\n'),
    html: html(intro, { label: 'Review in your account', href: input.link }, after),
  };
}

/** One of the owner's agents waits for the owner's approval to sign in to a website. */
export function approvalRequestMessage(input: {
  to: string;
  brand: string;
  link: string;
  agent: string;
  model: string;
  website: string;
  origin: string;
  matchCode: string;
  expiresAt: Date;
  /** The sign-ins waiting for the owner now, this one included. */
  waiting: number;
  /** At most one such mail per owner in this many seconds. */
  intervalSeconds: number;
}): MailMessage {
  const intro = [
    `Your agent ${input.agent} (model ${input.model}) wants to sign in to ${input.website} (${input.origin}), and waits for your approval.`,
    `Match code: ${input.matchCode}. The page where the sign-in waits shows the same code.`,
    ...(input.waiting > 1 ? [`In all, ${input.waiting} sign-ins of your agents are waiting for you: your account lists each one.`] : []),
  ];
  const after = [
    `Approve or decline it in your account before ${input.expiresAt.toISOString().slice(11, 16)} UTC. Approving asks for your passkey, or for a fresh sign-in by email. If you do not expect this sign-in, decline it.`,
    `You get at most one of these mails ${input.intervalSeconds === 60 ? 'a minute' : `in ${input.intervalSeconds} seconds`}: sign-ins that start meanwhile wait in your account, and the next mail says how many.`,
  ];
  const more = input.waiting > 1 ? ` (${input.waiting} waiting)` : '';
  return {
    to: input.to,
    subject: `Approve your agent's sign-in to ${input.website}? (${input.matchCode})${more}`,
    text: [...intro, '', `Review it: ${input.link}`, '', ...after, ''].join('\n'),
    html: html(intro, { label: 'Review the sign-in', href: input.link }, after),
  };
}

/** A change that weakened the owner's protection was made in their account: what, when, from where. */
export function protectionLoweredMessage(input: {
  to: string;
  brand: string;
  change: string;
  at: Date;
  address: string;
  browser: string;
  link: string;
}): MailMessage {
  const when = `${input.at.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
  const intro = [
    `A change that weakens the protection of your ${input.brand} account was just made: ${input.change}.`,
    `When: ${when}. From the address ${input.address}, with the browser “${input.browser}”.`,
    'If that was not you, someone holds a session of your account: sign out everywhere, undo the change, and check your passkeys and agents.',
  ];
  return {
    to: input.to,
    subject: `A change to your ${input.brand} account lowered its protection`,
    text: [...intro, '', `Your account: ${input.link}`, ''].join('\n'),
    html: html(intro, { label: 'Review your account', href: input.link }, []),
  };
}
