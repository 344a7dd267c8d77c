import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// The floors of src/ (src/README.md): a module may import its own floor or a lower one, never a
// higher one. src/agent stands apart: it re-exports the agent SDK package and imports nothing of the server.
const FLOORS: Record<string, number> = {
  protocol: 0,
  'errors.ts': 1,
  crypto: 1,
  'logger.ts': 1,
  'config.ts': 1,
  db: 2,
  'metrics.ts': 2,
  cache: 3,
  store: 3,
  'audit.ts': 4,
  events: 4,
  oauth: 4,
  oidc: 4,
  pages: 4,
  'openapi.ts': 4,
  'services.ts': 5,
  flows: 5,
  'grant-types': 5,
  plugins: 6,
  routes: 7,
  admin: 7,
  console: 7,
  jobs: 7,
  'app.ts': 8,
  'admin-app.ts': 8,
  'server.ts': 9,
  'main.ts': 10,
  'cli.ts': 10,
};

const SRC = 'src';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

const room = (file: string) => relative(SRC, file).split('/')[0];

/** The src/ files a module imports (static, re-exported or dynamic), as paths relative to the repo. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]/g)].map(
    (m) => m[1] ?? m[2],
  );
  return specifiers.map((s) => normalize(join(dirname(file), s.replace(/\.js$/, '.ts'))));
}

const files = sourceFiles(SRC);

describe('the architecture of src/', () => {
  it('gives every module a floor', () => {
    expect(files.map(room).filter((r) => FLOORS[r] === undefined && r !== 'agent')).toEqual([]);
  });

  it('has no import running up a floor, and an agent export that imports nothing of the server', () => {
    const upward: string[] = [];
    for (const file of files) {
      for (const target of importsOf(file)) {
        const from = room(file);
        const to = room(target);
        if (from === 'agent' ? to !== 'agent' : FLOORS[to] > FLOORS[from]) upward.push(`${file} -> ${target}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('has no import cycle', () => {
    const graph = new Map(files.map((f) => [f, importsOf(f)]));
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') return void cycles.push([...path.slice(path.indexOf(file)), file].join(' -> '));
      state.set(file, 'open');
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of files) visit(file, []);
    expect(cycles).toEqual([]);
  });

  it('keeps SQL in src/store and src/db', () => {
    const sql = /\b(SELECT\s+[\w*]|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b/;
    const outside = files.filter((f) => !['store', 'db'].includes(room(f)) && sql.test(readFileSync(f, 'utf8')));
    expect(outside).toEqual([]);
  });

  it('cites only documents that the repository holds', () => {
    // The names are put together here so that this file does not cite them itself.
    const outside = [['decisions', 'md'].join('\\.'), ['interface', 'spec'].join('-'), ['the', 'spec\\b'].join(' '), ['spec', "'s"].join('')];
    const cited = new RegExp(outside.join('|'));
    const docs = readdirSync('docs')
      .filter((f) => f.endsWith('.md'))
      .map((f) => join('docs', f));
    const tracked = [...files, ...sourceFiles('test'), 'README.md', ...docs];
    expect(tracked.filter((f) => cited.test(readFileSync(f, 'utf8')))).toEqual([]);
  });
});
