import { existsSync } from 'node:fs';
import type { BrowserContext, Page } from 'playwright-core';
import { describe } from 'vitest';
import { CHROMIUM_PATH } from '../../examples/agent/agent.js';

/** Whether Debian's Chromium (or CHROMIUM_PATH) is there; a browser is never downloaded. */
export const hasChromium = existsSync(CHROMIUM_PATH);

/**
 * `describe` for tests that drive a real browser: without Chromium they are skipped, with one line
 * saying why and how to get it (CI installs it, so there they always run).
 */
export function describeInChromium(what: string): typeof describe | typeof describe.skip {
  if (hasChromium) return describe;
  console.warn(`${what}: skipped, no Chromium at ${CHROMIUM_PATH} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
  return describe.skip;
}

/**
 * A virtual platform authenticator (CDP WebAuthn: resident keys, user verification on, presence
 * simulated) for `page`: it belongs to that page's target, so the ceremonies must run on it.
 */
export async function withVirtualAuthenticator(context: BrowserContext, page: Page): Promise<void> {
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
}
