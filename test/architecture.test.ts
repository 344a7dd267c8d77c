import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// The floors of src/ (src/README.md): a module may import its own floor or a lower one, never a
// higher one. src/agent stands apart: it re-exports the agent SDK package and imports nothing of the server.
const FLOORS: Record<string, number> = {
  protocol: 0,
  'defaults.ts': 0,
  'errors.ts': 1,
  crypto: 1,
  'logger.ts': 1,
  'config.ts': 1,
  db: 2,
  'metrics.ts': 2,
  mail: 2,
  cache: 3,
  store: 4,
  events: 5,
  'agent-keys': 5,
  oauth: 5,
  oidc: 5,
  dpop: 5,
  pages: 5,
  'agent-sign-in': 6,
  clients: 6,
  tokens: 6,
  owners: 6,
  passkeys: 6,
  approvals: 6,
  'owner-flows': 6,
  logout: 6,
  'services.ts': 7,
  plugins: 8,
  shapes: 8,
  routes: 9,
  admin: 9,
  console: 9,
  account: 9,
  jobs: 9,
  'fastify.ts': 10,
  'app.ts': 10,
  'admin-app.ts': 10,
  'server.ts': 11,
  'main.ts': 12,
  'cli.ts': 12,
};

// Who may reach for the process's services (src/services.ts): the HTTP layer and the wiring, which
// hand each flow, token operation and job the part it declares it needs. Below them, nothing
// looks services up.
const SERVICE_USERS = new Set([
  'services.ts',
  'plugins',
  'routes',
  'admin',
  'console',
  'account',
  'fastify.ts',
  'app.ts',
  'admin-app.ts',
  'server.ts',
]);

// The store slices (src/store/index.ts) each room may touch; a room not named here touches none.
const STORE_SLICES: Record<string, string[]> = {
  'services.ts': ['serverKeys'],
  oidc: ['serverKeys'],
  // DPoP proofs already accepted, on every instance.
  dpop: ['dpopProofs'],
  // Passkeys: their own rows and challenges.
  passkeys: ['passkeys'],
  // The mail that asks an owner for their approval.
  approvals: ['approvals'],
  // The person's flows: signing in (a session and its history row), the step-up, settings and passkeys, approval.
  'owner-flows': ['emailLinks', 'ownerSessions', 'passkeys', 'owners', 'auditLog', 'approvals'],
  // The portal reads what it shows (OWNER_READS); every change goes through src/owner-flows and src/owners.
  account: ['owners', 'auditLog', 'passkeys', 'approvals'],
  // The rules of a key and its registration, which the audit log records with who acted.
  'agent-keys': ['agentKeys', 'auditLog', 'serverKeys'],
  // The sign-in, and the checks of /authorize: the website and the resource it starts a sign-in for; the owner
  // path (agent-sign-in/owner-sign-in.ts) makes the owner's agent for a client.
  'agent-sign-in': ['signIns', 'agents', 'agentKeys', 'auditLog', 'clients', 'resources', 'clientAgents'],
  // Clients that are documents (Client ID Metadata Documents, an agent's own) or registered themselves.
  clients: ['clients', 'agents', 'agentKeys'],
  tokens: ['clients', 'grants', 'grantRecords', 'agents', 'resources'],
  owners: ['emailLinks', 'ownerSessions', 'ownerAgents', 'auditLog', 'grantRecords', 'owners', 'agents'],
  logout: ['logoutDeliveries'],
  jobs: ['signIns', 'maintenance'],
  // /readyz pings the store; the JWKS asks whether resources exist.
  routes: ['maintenance', 'resources'],
  admin: ['clients', 'agents', 'grantRecords', 'auditLog', 'serverKeys', 'logoutDeliveries', 'owners', 'resources'],
  console: ['clients', 'agents', 'grantRecords', 'consoleSessions', 'logoutDeliveries', 'resources'],
};

// Fastify stays in the HTTP floors (plugins and up), but for the logger's options and the pages,
// which render through the reply: flows and token operations take plain values.
// What the portal may call on its slices: reads. The person's flows write (src/owner-flows), not the routes.
const OWNER_READS = new Set(['settings', 'count', 'list', 'pending', 'ofOwner']);

const FASTIFY_BELOW_PLUGINS = new Set(['logger.ts', 'pages']);

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

/** A module's text without its comments, so that prose naming a room or a slice counts for nothing. */
const code = (file: string) =>
  readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');

/** The store slices a module names: `store.x`, `Store['x']`, `Pick<Store, 'x' | …>`, `const { x } = ….store`. */
function slicesOf(file: string): string[] {
  const text = code(file);
  const named = [
    ...[...text.matchAll(/\bstore\.(?!js\b)(\w+)/g)].map((m) => [m[1]]),
    ...[...text.matchAll(/\bStore\['(\w+)'\]/g)].map((m) => [m[1]]),
    ...[...text.matchAll(/\b(?:Pick<Store|RevocationDeps<)\s*,?\s*((?:'\w+'\s*\|?\s*)+)>/g)].map((m) => m[1].match(/\w+/g) ?? []),
    ...[...text.matchAll(/\{([\w\s,]+)\}\s*=\s*[\w.]*\bstore\s*;/g)].map((m) => m[1].split(',').map((name) => name.trim())),
  ];
  return [...new Set(named.flat())];
}

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

  it('lets only the HTTP layer and the wiring look services up; the rest is handed what it needs', () => {
    const lookups = files.filter((f) => !SERVICE_USERS.has(room(f)) && /\.services\b|\bServices\b|services\.js'/.test(code(f)));
    expect(lookups).toEqual([]);
  });

  it('hands the services in: no module reaches them through the request', () => {
    expect(files.filter((f) => /\brequest\.server\.services\b/.test(code(f)))).toEqual([]);
  });

  it('lets each room touch only its store slices, and builds the store in one place', () => {
    const touched = files.flatMap((f) => {
      const allowed = room(f) === 'store' ? undefined : (STORE_SLICES[room(f)] ?? []);
      return allowed
        ? slicesOf(f)
            .filter((slice) => !allowed.includes(slice))
            .map((slice) => `${f}: store.${slice}`)
        : [];
    });
    expect(touched).toEqual([]);
    const built = files.filter((f) => !['store', 'services.ts'].includes(room(f)) && /\bcreate\w*Store\b/.test(code(f)));
    expect(built).toEqual([]);
  });

  it('lists the same store slices per room in src/README.md', () => {
    const readme = readFileSync(join(SRC, 'README.md'), 'utf8');
    const table = readme.slice(readme.indexOf('<!-- store-slices -->'), readme.indexOf('<!-- /store-slices -->'));
    const listed = Object.fromEntries(
      [...table.matchAll(/^\| `([\w.-]+)`\s*\|([^|]+)\|/gm)].map((m) => [
        m[1],
        m[2]
          .replace(/\(.*?\)/g, '')
          .split(',')
          .map((x) => x.trim()),
      ]),
    );
    expect(listed).toEqual(STORE_SLICES);
  });

  it('has one rule for the id of a record in a request (src/shapes/ids.ts), beside the protocol ids', () => {
    const own = /\b(?:id|\w+Id|\w+_id|jti|kid)\s*[:=]\s*z\s*\.string\(\)\s*\.(?:min|max)\(/;
    expect(files.filter((f) => room(f) !== 'shapes' && own.test(code(f)))).toEqual([]);
  });

  it('lists every subscriber of the events in src/README.md', () => {
    const readme = readFileSync(join(SRC, 'README.md'), 'utf8');
    const list = readme.slice(readme.indexOf('<!-- subscribers -->'), readme.indexOf('<!-- /subscribers -->'));
    const listed = [...list.matchAll(/^- `([\w/.-]+)`/gm)].map((m) => join(SRC, m[1])).sort();
    expect(files.filter((f) => /\bevents\.on\(/.test(code(f))).sort()).toEqual(listed);
  });

  it('lets no route of the portal write the store: it parses, calls a flow and renders', () => {
    const writes = files
      .filter((f) => room(f) === 'account')
      .flatMap((f) => [...code(f).matchAll(/\bstore\.(\w+)\.(\w+)/g)].map((m) => `${f}: store.${m[1]}.${m[2]}`))
      .filter((call) => !OWNER_READS.has(call.split('.').at(-1)!));
    expect(writes).toEqual([]);
  });

  it('keeps Fastify in the HTTP floors: flows and token operations take plain values', () => {
    const fastify = /from\s+['"](?:fastify|fastify-plugin|@fastify\/[\w-]+)['"]/;
    const below = files.filter((f) => FLOORS[room(f)] < FLOORS.plugins && !FASTIFY_BELOW_PLUGINS.has(room(f)) && fastify.test(code(f)));
    expect(below).toEqual([]);
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
