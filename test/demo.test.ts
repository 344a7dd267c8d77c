import { spawn } from 'node:child_process';
import { expect, it } from 'vitest';
import { main } from '../examples/demo.js';
import { describeInChromium } from './helpers/chromium.js';
import { finished, repoRoot } from './helpers/process.js';

describeInChromium('the demo test')('npm run demo', () => {
  it('signs the agent in to the example website through a real browser', { timeout: 180_000 }, async () => {
    const lines: string[] = [];
    const email = await main((line) => lines.push(line));
    expect(email).toBe('alice@example.com');
    expect(lines.at(-1)).toBe('the website shows: signed in as alice@example.com');
  });
});

it(
  'npm run demo without Chromium says what to install, before starting anything, and exits 1 without a stack trace',
  { timeout: 60_000 },
  async () => {
    const res = await finished(
      spawn('npm', ['run', '--silent', 'demo'], {
        cwd: repoRoot,
        env: { ...process.env, CHROMIUM_PATH: '/nonexistent/chromium' },
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr.trim()).toBe(
      'demo: npm run demo drives Chromium, and there is none at /nonexistent/chromium: apt-get install -y chromium (Debian), or set CHROMIUM_PATH to a Chromium binary',
    );
  },
);
