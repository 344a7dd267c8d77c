import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CHROMIUM_PATH } from '../examples/agent/agent.js';
import { main } from '../examples/demo.js';

const hasChromium = existsSync(CHROMIUM_PATH);
if (!hasChromium) console.warn(`demo test skipped: no Chromium at ${CHROMIUM_PATH} (apt-get install -y chromium)`);

describe.skipIf(!hasChromium)('npm run demo', () => {
  it('signs the agent in to the example website through a real browser', { timeout: 180_000 }, async () => {
    const lines: string[] = [];
    const email = await main((line) => lines.push(line));
    expect(email).toBe('alice@example.com');
    expect(lines.at(-1)).toBe('the website shows: signed in as alice@example.com');
  });
});
