import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const here = (path: string) => new URL(`../${path}`, import.meta.url);
const manifest = JSON.parse(readFileSync(here('package.json'), 'utf8'));

describe('the package stands alone', () => {
  it('has no dependencies, only tools to build and test it', () => {
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.peerDependencies).toBeUndefined();
    expect(Object.keys(manifest.devDependencies).sort()).toEqual(['@types/node', 'typescript', 'vitest']);
  });

  it("imports nothing but its own files and Node's built-ins: fetch and the platform do the rest", () => {
    const outside = readdirSync(here('src'))
      .flatMap((file) => [...readFileSync(here(`src/${file}`), 'utf8').matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)])
      .map((m) => m[1])
      .filter((specifier) => !specifier.startsWith('./') && !specifier.startsWith('node:'));
    expect(outside).toEqual([]);
  });
});
