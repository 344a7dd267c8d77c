import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { configDocs } from '../scripts/config-docs.js';
import { variableDocs } from '../src/config.js';

describe('the configuration tables of README.md and docs/operations.md', () => {
  it('are what npm run docs:config writes from src/config.ts (run it after changing a variable)', () => {
    for (const [path, { current, generated }] of configDocs(process.cwd())) expect(current, path).toBe(generated);
  });

  it('document every variable, with a line for the README and the whole text for operators', () => {
    const variables = variableDocs();
    expect(variables.map((v) => v.name)).toEqual(expect.arrayContaining(['PORT', 'DATABASE_URL', 'JWT_SECRETS', 'TRUST_PROXY', 'BRAND_NAME']));
    for (const { name, title, description } of variables)
      expect(
        [title, description].every((text) => /^\S.{4,}[.)]$/s.test(text)),
        name,
      ).toBe(true);
  });

  it('are checked by npm run docs:config -- --check, which fails on a stale file', async () => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/config-docs.ts', '--check']);
    expect(stdout + stderr).toBe('');
  });
});
