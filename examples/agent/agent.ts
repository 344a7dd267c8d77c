/**
 * An AI agent's side of "Sign in with agent": it drives a real Chromium (playwright-core, the
 * system's browser, never a downloaded one), clicks the website's link, and lets the SDK read the
 * request id off agent-auth's page, authenticate on the back channel and wait for the sign-in.
 */
import { AgentAuthClient } from 'agent-auth/agent';
import { chromium } from 'playwright-core';

export interface AgentOptions {
  websiteUrl: string;
  /** agent-auth's base URL (issuer). */
  baseUrl: string;
  agentId: string;
  agentSecret: string;
  model: string;
  /** Debian's chromium by default (apt-get install chromium). */
  executablePath?: string;
  timeoutMs?: number;
}

/** Debian's Chromium unless CHROMIUM_PATH says otherwise; a browser is never downloaded. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

// Headless, and quiet on a closed network: no background connections for updates or sync.
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function launchChromium(executablePath = CHROMIUM_PATH) {
  return chromium.launch({ executablePath, args: CHROMIUM_ARGS });
}

/** Signs in to the website and returns the email the website shows for the signed-in user. */
export async function runAgent(options: AgentOptions): Promise<string> {
  const { websiteUrl, baseUrl, agentId, agentSecret, model, timeoutMs = 60_000 } = options;
  const sdk = new AgentAuthClient({ baseUrl, agentId, agentSecret, model });
  const browser = await launchChromium(options.executablePath);
  try {
    const page = await browser.newPage();
    page.setDefaultTimeout(timeoutMs);
    await page.goto(websiteUrl);
    await page.getByRole('link', { name: 'Sign in with agent' }).click();

    // The browser is now on agent-auth's authorization page; the SDK takes it from here.
    await sdk.signIn(page, { timeoutMs, pageTimeoutMs: timeoutMs });

    // The page sends the browser back to the website, which redeems the code and shows the user.
    const signedIn = page.locator('#email');
    const failed = page.locator('#error');
    await signedIn.or(failed).waitFor();
    if (await failed.isVisible()) throw new Error(`the website reports: ${await failed.textContent()}`);
    return (await signedIn.textContent())!.trim();
  } finally {
    await browser.close();
  }
}
