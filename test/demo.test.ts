import { expect, it } from 'vitest';
import { main } from '../examples/demo.js';
import { describeInChromium } from './helpers/chromium.js';

describeInChromium('the demo test')('npm run demo', () => {
  it('signs the agent in to the example website through a real browser', { timeout: 180_000 }, async () => {
    const lines: string[] = [];
    const email = await main((line) => lines.push(line));
    expect(email).toBe('alice@example.com');
    expect(lines.at(-1)).toBe('the website shows: signed in as alice@example.com');
  });
});
