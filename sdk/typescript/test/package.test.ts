import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const here = (path: string) => new URL(`../${path}`, import.meta.url);
const manifest = JSON.parse(readFileSync(here('package.json'), 'utf8'));
const sources = readdirSync(here('src')).map((file) => [file, readFileSync(here(`src/${file}`), 'utf8')] as const);
// `import type … from '…'`: erased from the built code, so nothing is loaded at run time.
const TYPE_ONLY = /import type [^;]+? from ['"]([^'"]+)['"]/g;
const isOutside = (specifier: string) => !specifier.startsWith('./') && !specifier.startsWith('node:');

describe('the package stands alone', () => {
  it('has no dependencies, only tools to build and test it; its one peer, the MCP SDK, is optional', () => {
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.peerDependencies).toEqual({ '@modelcontextprotocol/sdk': expect.any(String) });
    expect(manifest.peerDependenciesMeta).toEqual({ '@modelcontextprotocol/sdk': { optional: true } });
    expect(Object.keys(manifest.devDependencies).sort()).toEqual(['@types/node', 'typescript', 'vitest']);
  });

  it("imports nothing but its own files and Node's built-ins: fetch and the platform do the rest", () => {
    const outside = sources
      .flatMap(([, text]) => [...text.replace(TYPE_ONLY, '').matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)])
      .map((m) => m[1])
      .filter(isOutside);
    expect(outside).toEqual([]);
  });

  it("takes only the MCP SDK's types, and only in its MCP entry point", () => {
    const types = sources.flatMap(([file, text]) => [...text.matchAll(TYPE_ONLY)].filter((m) => isOutside(m[1])).map((m) => `${file}: ${m[1]}`));
    expect(types).toEqual(['mcp.ts: @modelcontextprotocol/sdk/client/auth.js', 'mcp.ts: @modelcontextprotocol/sdk/shared/auth.js']);
  });
});
