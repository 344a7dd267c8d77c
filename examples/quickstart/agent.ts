// An agent that signs in to a website with "Sign in with agent" (the README's quick start).
//   AGENT_ID=… AGENT_SECRET=… npx tsx examples/quickstart/agent.ts
import { AgentAuthClient } from '@agent-auth/agent';
import { chromium } from 'playwright-core';

const authUrl = process.env.AGENT_AUTH_URL ?? 'http://localhost:3000'; // agent-auth's issuer
const websiteUrl = process.env.WEBSITE_URL ?? 'http://localhost:8080'; // where the agent signs in

const agent = new AgentAuthClient({
  baseUrl: authUrl,
  agentId: process.env.AGENT_ID!,
  agentSecret: process.env.AGENT_SECRET!,
  model: 'my-model-1',
});

// In a function, not top-level await: the same file runs in an ES module project and in a CommonJS one
// (what `npm init -y` makes), where top-level await is refused.
async function main() {
  // Debian's Chromium (apt-get install chromium), or the one CHROMIUM_PATH names: nothing is downloaded.
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(websiteUrl);
    await page.getByRole('link', { name: 'Sign in with agent' }).click();
    // Reads the request id off agent-auth's page, authenticates for this website only, and waits
    // until the browser has the code.
    await agent.signIn(page, { expectedWebsite: websiteUrl });
    // The browser is now on its way back: wait until the website has taken the code.
    await page.waitForURL((url) => url.origin === new URL(websiteUrl).origin);
    console.log(`Back on ${page.url()}: ${await page.locator('body').innerText()}`);
  } finally {
    await browser.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
