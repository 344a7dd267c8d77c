#!/usr/bin/env node
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { adminTokenPath } from './admin/admin-token.js';
import { DEFAULT_ADMIN_PORT, DEFAULT_DATA_DIR } from './defaults.js';
import { replaceUnprintable } from './protocol/unprintable.js';

/** `agent-auth`: the operators' command line over the admin API (docs/protocol.md, README "Registering"). */

class CliError extends Error {}

type Row = Record<string, unknown>;

interface GlobalOptions {
  url: string;
  token?: string;
  json?: boolean;
  env?: boolean;
}

// ADMIN_TOKEN wins; else the token the server wrote beside its data, as on the same machine.
function adminToken(options: GlobalOptions): string {
  if (options.token) return options.token;
  if (process.env.ADMIN_TOKEN) return process.env.ADMIN_TOKEN;
  const file = adminTokenPath(process.env.DATA_DIR || DEFAULT_DATA_DIR);
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    throw new CliError(`no admin token: pass --token, set ADMIN_TOKEN, or run where ${file} exists`);
  }
}

/** The URL without its trailing slashes; by index, as `/\/+$/` would retry from every slash of a long run. */
function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url[end - 1] === '/') end--;
  return url.slice(0, end);
}

/** The one way the CLI talks to the server; a refusal becomes a CliError with the server's description. */
async function request(options: GlobalOptions, method: string, path: string, body?: object): Promise<unknown> {
  const url = `${withoutTrailingSlashes(options.url)}/admin${path}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${adminToken(options)}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch (err) {
    if (err instanceof CliError) throw err;
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new CliError(
      `cannot reach the admin API at ${options.url} (${cause}); is the server running? ` +
        'Point the CLI at its admin listener with --url, AGENT_AUTH_ADMIN_URL or ADMIN_PORT',
    );
  }
  const text = await res.text();
  const data = text ? JSON.parse(text) : undefined;
  if (!res.ok) throw new CliError(data?.error_description ?? `HTTP ${res.status}`);
  return data;
}

// Unprintable characters (src/protocol/text.ts) printed raw could move the cursor, recolour or
// reorder the terminal, or forge a line of output (an audit row, say).
const escapeUnit = (char: string) => Array.from({ length: char.length }, (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`).join('');

/** `text` with every unprintable character written as JSON escapes it (\uXXXX per UTF-16 unit). */
const escapeControls = (text: string) => replaceUnprintable(text, escapeUnit);

const show = (value: unknown) => escapeControls(Array.isArray(value) ? value.join(', ') : value === null ? '-' : String(value));

/** JSON.stringify escapes C0 controls inside strings; the rest is escaped here, leaving the layout's newlines. */
const printJson = (data: unknown) => console.log(replaceUnprintable(JSON.stringify(data, null, 2), escapeUnit, '\n'));

/** A record's ids and secrets as `export CLIENT_ID='…'` lines, for `eval "$(agent-auth --env …)"`. */
function printEnv(row: Row) {
  for (const [key, value] of Object.entries(row)) {
    if (/_(id|secret)$/.test(key) && typeof value === 'string') console.log(`export ${key.toUpperCase()}='${value.replaceAll("'", `'\\''`)}'`);
  }
}

function printRecord(row: Row) {
  const width = Math.max(...Object.keys(row).map((k) => k.length));
  for (const [key, value] of Object.entries(row)) console.log(`${key.padEnd(width)}  ${show(value)}`);
}

function printTable(rows: Row[], columns: string[]) {
  if (rows.length === 0) return console.log('(none)');
  const cells = [columns, ...rows.map((r) => columns.map((c) => show(r[c])))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i].length)));
  for (const line of cells)
    console.log(
      line
        .map((cell, i) => cell.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    );
}

const globals = (c: Command) => c.optsWithGlobals<GlobalOptions>();

/** The raw JSON with --json, else the readable form. */
function print<T>(c: Command, data: T, readable: (data: T) => void) {
  if (globals(c).json) printJson(data);
  else readable(data);
}

const parseBool = (value: string) => {
  if (value !== 'true' && value !== 'false') throw new InvalidArgumentError('expected true or false');
  return value === 'true';
};
const collect = (value: string, previous: string[] = []) => [...previous, value];

interface Field {
  flags: string;
  description: string;
  /** Key in the request body. */
  key: string;
  parse?(value: string, previous: unknown): unknown;
  /** The word that clears the field (sent as null). */
  clear?: string;
  /** On create: required, optional, or not accepted at all (undefined). */
  create?: 'required' | 'optional';
  update?: boolean;
}

const activeField: Field = { flags: '--active <bool>', description: 'true or false', key: 'active', parse: parseBool, update: true };

interface Resource {
  plural: string;
  singular: string;
  secretField: string;
  columns: string[];
  fields: Field[];
}

function fieldOption(field: Field, required: boolean): Option {
  const option = new Option(field.flags, field.description);
  if (field.parse) option.argParser(field.parse);
  if (required) option.makeOptionMandatory();
  return option;
}

function bodyFrom(fields: Field[], values: Record<string, unknown>): Row {
  const body: Row = {};
  for (const field of fields) {
    const value = values[new Option(field.flags).attributeName()];
    if (value !== undefined) body[field.key] = field.clear !== undefined && value === field.clear ? null : value;
  }
  return body;
}

/** create/list/get/update/activate/deactivate/rotate-secret/delete for one resource. */
function resourceCommand(resource: Resource): Command {
  const { plural, singular } = resource;
  const a = /^[aeiou]/.test(singular) ? `an ${singular}` : `a ${singular}`;
  const cmd = new Command(plural).description(`manage registered ${plural}`);
  const path = (id?: string) => (id ? `/${plural}/${encodeURIComponent(id)}` : `/${plural}`);

  // Prints one record; secrets get a reminder on stderr so that --json and --env output stay clean.
  const output = (c: Command, data: unknown) => {
    if (globals(c).json) return printJson(data);
    if (globals(c).env) return printEnv(data as Row);
    printRecord(data as Row);
    if ((data as Row)[resource.secretField]) {
      console.error(`note: ${resource.secretField} is shown only this once; store it now`);
    }
  };

  const createFields = resource.fields.filter((f) => f.create);
  const create = cmd.command('create').description(`register ${a}`);
  for (const field of createFields) create.addOption(fieldOption(field, field.create === 'required'));
  create.action(async (options, c: Command) => {
    output(c, await request(globals(c), 'POST', path(), bodyFrom(createFields, options)));
  });

  cmd
    .command('list')
    .description(`list ${plural}`)
    .action(async (_options, c: Command) => {
      const data = (await request(globals(c), 'GET', path())) as Record<string, Row[]>;
      if (globals(c).json) printJson(data);
      else printTable(data[plural], resource.columns);
    });

  cmd
    .command('get <id>')
    .description(`show one ${singular}`)
    .action(async (id: string, _options, c: Command) => output(c, await request(globals(c), 'GET', path(id))));

  const updateFields = [...resource.fields.filter((f) => f.update), activeField];
  const update = cmd.command('update <id>').description(`change ${a}`);
  for (const field of updateFields) update.addOption(fieldOption(field, false));
  update.action(async (id: string, options, c: Command) => {
    output(c, await request(globals(c), 'PATCH', path(id), bodyFrom(updateFields, options)));
  });

  for (const [name, active] of [
    ['activate', true],
    ['deactivate', false],
  ] as const) {
    cmd
      .command(`${name} <id>`)
      .description(`${name} ${a}`)
      .action(async (id: string, _options, c: Command) => output(c, await request(globals(c), 'PATCH', path(id), { active })));
  }

  cmd
    .command('rotate-secret <id>')
    .description(`issue a new ${singular} secret; the old one stops working, and so do the ${singular}'s tokens and sign-ins in flight`)
    .option('--no-revoke-grants', 'keep the tokens already issued working: only the old secret stops')
    .action(async (id: string, options: { revokeGrants: boolean }, c: Command) => {
      output(c, await request(globals(c), 'POST', `${path(id)}/secret`, { revoke_grants: options.revokeGrants }));
      if (!globals(c).json && !globals(c).env) {
        console.error(
          options.revokeGrants
            ? `note: the old secret, every token of this ${singular} and every sign-in in flight no longer work`
            : `note: only the old secret no longer works; tokens already issued keep working`,
        );
      }
    });

  cmd
    .command('delete <id>')
    .description(`delete ${a}`)
    .action(async (id: string, _options, c: Command) => {
      await request(globals(c), 'DELETE', path(id));
      if (globals(c).json) printJson({ deleted: id });
      else console.log(`deleted ${singular} ${show(id)}`);
    });

  return cmd;
}

// Sign-in history and revocation (the agent owners' controls), added to the resource commands.

const GRANT_COLUMNS = ['grant_id', 'agent_id', 'client_name', 'model', 'active', 'created_at', 'last_refreshed_at', 'revoked_reason'];
const segment = encodeURIComponent;

/** `name <argument>`: a POST that revokes grants and answers {revoked}. */
function revokeCommand(name: string, argument: string, description: string, path: (key: string) => string, body?: (key: string) => object) {
  return new Command(name)
    .argument(argument)
    .description(description)
    .action(async (key: string, _options, c: Command) => {
      const data = (await request(globals(c), 'POST', path(key), body?.(key))) as { revoked: number };
      print(c, data, ({ revoked }) => console.log(`revoked ${revoked} grant${revoked === 1 ? '' : 's'}`));
    });
}

// An agent's public keys; --generate makes the pair here, so that the private key never leaves this machine.
const KEY_TYPES = { EdDSA: () => generateKeyPairSync('ed25519'), ES256: () => generateKeyPairSync('ec', { namedCurve: 'P-256' }) };

/** The public JWK in `file`; a private key is refused here, before it is sent anywhere. */
function readPublicJwk(file: string): Row {
  let jwk: unknown;
  try {
    jwk = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CliError(`cannot read a JWK from ${file}: ${(err as Error).message}`);
  }
  if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk)) throw new CliError(`${file} does not hold a JWK (a JSON object)`);
  if ('d' in jwk) throw new CliError(`${file} holds a private key: register its public half (the JWK without "d")`);
  return jwk as Row;
}

/**
 * A new key pair: the private key written to `out` (PKCS#8 PEM, or a JWK) with mode 0600 (never over
 * an existing file), the public half returned for registration.
 */
function generateKey(alg: keyof typeof KEY_TYPES, out: string, format: 'pem' | 'jwk'): { jwk: Row; forget: () => void } {
  const { privateKey, publicKey } = KEY_TYPES[alg]();
  const text = format === 'pem' ? privateKey.export({ format: 'pem', type: 'pkcs8' }) : `${JSON.stringify(privateKey.export({ format: 'jwk' }))}\n`;
  try {
    writeFileSync(out, text, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    throw new CliError(`cannot write the private key to ${out}: ${(err as Error).message}`);
  }
  return { jwk: publicKey.export({ format: 'jwk' }) as Row, forget: () => unlinkSync(out) };
}

/** The git work tree `file` would be in (the nearest folder above it with a `.git`), if any. */
function gitWorkTreeOf(file: string): string | undefined {
  for (let dir = dirname(resolve(file)); ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}
/** The two kinds of agent keys (docs/protocol.md, "Agent assertions", "Signed agent requests"), each a command. */
const KEY_COMMANDS = [
  {
    name: 'keys',
    description: "an agent's public keys, for signing in with an assertion instead of its secret",
    algs: ['EdDSA', 'ES256'] as (keyof typeof KEY_TYPES)[],
    format: 'pem' as const,
    remove: 'delete',
    removed: 'assertions it signs are refused from now on',
  },
  {
    name: 'signing-keys',
    description: "an agent's request-signing keys (Ed25519), for Web Bot Auth signatures on its HTTP requests",
    algs: ['EdDSA'] as (keyof typeof KEY_TYPES)[],
    format: 'jwk' as const,
    remove: 'remove',
    removed: 'requests it signs are refused once websites reread the directory',
  },
];

function withAgentKeys(agents: Command): Command {
  for (const kind of KEY_COMMANDS) {
    const keys = agents.command(kind.name).description(kind.description);
    const path = (id: string, kid?: string) => `/agents/${segment(id)}/${kind.name}${kid === undefined ? '' : `/${segment(kid)}`}`;
    const add = keys
      .command('add <agent>')
      .description('register a public key: from a JWK file, or a new key pair whose private half goes to --out')
      .addOption(
        new Option('--jwk <file>', `a public JWK (${kind.algs.length > 1 ? 'Ed25519 or P-256' : 'Ed25519'}) in a file`).conflicts('generate'),
      )
      .addOption(new Option('--generate', 'make a new key pair here; the private key is written to --out, never printed'))
      .addOption(
        new Option(
          '--out <file>',
          `with --generate: where to write the private key (${kind.format === 'pem' ? 'PKCS#8 PEM' : 'a private JWK'}, mode 0600)`,
        ),
      );
    if (kind.algs.length > 1) {
      add.addOption(new Option('--alg <alg>', 'with --generate: EdDSA (Ed25519) or ES256 (P-256)').choices(kind.algs).default('EdDSA'));
    }
    add.action(async (agent: string, options: { jwk?: string; generate?: boolean; out?: string; alg?: keyof typeof KEY_TYPES }, c: Command) => {
      if (!options.jwk && !options.generate) throw new CliError('give --jwk FILE, or --generate --out FILE');
      if (options.generate && !options.out) throw new CliError('--generate needs --out FILE for the private key');
      const generated = options.generate ? generateKey(options.alg ?? 'EdDSA', options.out!, kind.format) : undefined;
      let added: Row;
      try {
        added = (await request(globals(c), 'POST', path(agent), { jwk: generated?.jwk ?? readPublicJwk(options.jwk!) })) as Row;
      } catch (err) {
        // Not registered: a private key for nothing is not left behind.
        generated?.forget();
        throw err;
      }
      print(c, added, printRecord);
      if (!generated) return;
      console.error(`note: the private key is in ${show(options.out)} (mode 0600); give it to the agent, and to no one else`);
      const tree = gitWorkTreeOf(options.out!);
      if (tree) {
        console.error(
          `warning: ${show(options.out)} is inside the git work tree ${show(tree)}: move it out, or make sure .gitignore ignores it, so that no commit carries it`,
        );
      }
    });
    keys
      .command('list <agent>')
      .description(`list an agent's ${kind.name}`)
      .action(async (agent: string, _options, c: Command) => {
        const data = (await request(globals(c), 'GET', path(agent))) as { keys: Row[] };
        print(c, data, ({ keys: rows }) => printTable(rows, ['kid', 'alg', 'created_at', 'last_used_at']));
      });
    keys
      .command(`${kind.remove} <agent> <kid>`)
      .description(`${kind.remove} a key: ${kind.removed}`)
      .action(async (agent: string, kid: string, _options, c: Command) => {
        await request(globals(c), 'DELETE', path(agent, kid));
        print(c, { deleted: kid }, () => console.log(`deleted key ${show(kid)}`));
      });
  }
  return agents;
}

function withAgentGrants(agents: Command): Command {
  agents
    .command('grants <id>')
    .description('list the websites an agent signed into (its grants, newest first)')
    .action(async (id: string, _options, c: Command) => {
      const data = (await request(globals(c), 'GET', `/agents/${segment(id)}/grants`)) as { grants: Row[] };
      print(c, data, ({ grants }) => printTable(grants, GRANT_COLUMNS));
    });
  return agents.addCommand(
    revokeCommand(
      'revoke-grants',
      '<id>',
      'the kill switch: revoke every grant of an agent, at every website',
      (id) => `/agents/${segment(id)}/revoke-grants`,
    ),
  );
}

function withClientAgents(clients: Command): Command {
  clients
    .command('agents <id>')
    .description('list the agents signed in at a website now, with their models')
    .action(async (id: string, _options, c: Command) => {
      const data = (await request(globals(c), 'GET', `/clients/${segment(id)}/agents`)) as { agents: Row[] };
      print(c, data, ({ agents }) => printTable(agents, ['agent_id', 'email', 'name', 'models', 'grants', 'last_active_at']));
    });
  return clients.addCommand(
    revokeCommand(
      'revoke-grants',
      '<id>',
      'revoke everything a website holds: every grant of every agent',
      (id) => `/clients/${segment(id)}/revoke-grants`,
    ),
  );
}

const usersCommand = new Command('users').description("a user's agents and sign-ins, by email");
usersCommand
  .command('show <email>')
  .description("show a user's agents and grants")
  .action(async (email: string, _options, c: Command) => {
    const data = (await request(globals(c), 'GET', `/users?email=${segment(email)}`)) as { email: string; agents: Row[]; grants: Row[] };
    print(c, data, ({ email: shown, agents, grants }) => {
      console.log(`email  ${show(shown)}\n\nagents`);
      printTable(agents, ['agent_id', 'name', 'active', 'created_at']);
      console.log('\ngrants');
      printTable(grants, GRANT_COLUMNS);
    });
  });
usersCommand.addCommand(
  revokeCommand(
    'revoke-grants',
    '<email>',
    'revoke every grant of every agent of a user',
    () => '/users/revoke-grants',
    (email) => ({ email }),
  ),
);

const grantsCommand = new Command('grants')
  .description('grants, each one sign-in of one agent at one website')
  .addCommand(revokeCommand('revoke', '<id>', 'revoke one grant: that website loses the agent', (id) => `/grants/${segment(id)}/revoke`));

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$/;
const parseDate = (value: string) => {
  if (!ISO_DATE.test(value) || Number.isNaN(Date.parse(value))) {
    throw new InvalidArgumentError('expected an ISO 8601 date, e.g. 2025-01-31 or 2025-01-31T12:00:00Z');
  }
  return value;
};
const parseLimit = (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 200) throw new InvalidArgumentError('expected a whole number from 1 to 200');
  return value;
};

// Flag -> query parameter of GET /admin/audit.
const AUDIT_FILTERS: [flags: string, description: string, param: string, parse?: (value: string) => string][] = [
  ['--agent <id>', 'events of this agent', 'agent_id'],
  ['--email <email>', "events of this user's agents", 'email'],
  ['--client <id>', 'events at this website (client)', 'client_id'],
  ['--request <id>', 'events of this authorization request', 'request_id'],
  ['--event <event>', 'only this event, e.g. revoked', 'event'],
  ['--actor <actor>', 'only what operators (admin) or owners (owner) did', 'actor'],
  ['--since <date>', 'from this time on (ISO 8601: 2025-01-31 or 2025-01-31T12:00:00Z)', 'from', parseDate],
  ['--until <date>', 'before this time (ISO 8601: 2025-01-31 or 2025-01-31T12:00:00Z)', 'to', parseDate],
  ['--limit <n>', 'events per page (1-200, default 50)', 'limit', parseLimit],
  ['--cursor <cursor>', 'the next page, as printed after the previous one', 'cursor'],
];

const auditCommand = new Command('audit').description('the audit log, newest first');
for (const [flags, description, , parse] of AUDIT_FILTERS)
  auditCommand.addOption(parse ? new Option(flags, description).argParser(parse) : new Option(flags, description));
auditCommand.action(async (options: Record<string, string>, c: Command) => {
  const query = new URLSearchParams();
  for (const [flags, , param] of AUDIT_FILTERS) {
    const value = options[new Option(flags).attributeName()];
    if (value !== undefined) query.set(param, value);
  }
  const data = (await request(globals(c), 'GET', `/audit?${query}`)) as { events: Row[]; next_cursor: string | null };
  print(c, data, ({ events, next_cursor }) => {
    // actor: who acted (admin, owner), or - for what agents, websites and the server did.
    printTable(events, ['id', 'at', 'event', 'actor', 'agent_id', 'client_id', 'model', 'reason']);
    if (next_cursor) console.error(`more: --cursor ${show(next_cursor)}`);
  });
});

// The back-channel logout outbox (OpenID Connect mode).
const DELIVERY_COLUMNS = ['jti', 'client_id', 'agent_id', 'reason', 'attempts', 'created_at', 'last_error'];
const logoutCommand = new Command('logout-deliveries').description('logout tokens sent to websites when grants end (back-channel logout)');
logoutCommand
  .command('failed')
  .description('list deliveries given up after an hour of refusals, newest first')
  .option('--client <id>', 'of one website only')
  .action(async (options: { client?: string }, c: Command) => {
    const query = new URLSearchParams({ status: 'failed', ...(options.client ? { client_id: options.client } : {}) });
    const data = (await request(globals(c), 'GET', `/logout-deliveries?${query}`)) as { deliveries: Row[] };
    print(c, data, ({ deliveries }) => printTable(deliveries, DELIVERY_COLUMNS));
  });
logoutCommand
  .command('retry <jti>')
  .description('try a failed delivery again now (the same logout token id)')
  .action(async (jti: string, _options, c: Command) => {
    const data = (await request(globals(c), 'POST', `/logout-deliveries/${segment(jti)}/retry`)) as Row;
    print(c, data, (delivery) => console.log(`delivery ${show(String(delivery.jti))} is pending again; the sender tries it now`));
  });

// The ID token signing keys (OpenID Connect mode).
const printKeys = (data: { alg: string; current_kid: string; current: Row[]; keys: Row[] }) => {
  console.log(`default alg  ${show(data.alg)}\ncurrent kid  ${show(data.current_kid)}\n\ncurrent`);
  printTable(data.current, ['alg', 'kid']);
  console.log('\npublished');
  printTable(data.keys, ['kid', 'alg', 'kty']);
};
const keysCommand = new Command('keys').description('the keys that sign ID tokens (OpenID Connect mode)');
keysCommand
  .command('list')
  .description('show the current key and every key still published in the JWKS')
  .action(async (_options, c: Command) => print(c, (await request(globals(c), 'GET', '/keys')) as Parameters<typeof printKeys>[0], printKeys));
keysCommand
  .command('rotate')
  .description('make a new key current; the old one stays published until the tokens it signed have expired')
  .action(async (_options, c: Command) =>
    print(c, (await request(globals(c), 'POST', '/keys/rotate')) as Parameters<typeof printKeys>[0], printKeys),
  );

// Resources: the MCP servers and APIs that take JWT access tokens (docs/protocol.md, "Resources").
const RESOURCE_COLUMNS = ['resource', 'name', 'scopes', 'client_id', 'signing_alg'];
const resourcesCommand = new Command('resources').description('the MCP servers (and other APIs) that take JWT access tokens');
resourcesCommand
  .command('add <resource>')
  .description('register a resource by its identifier: an https URL (a trailing slash names the same one)')
  .requiredOption('--name <name>', 'display name, shown to people when they sign in')
  .option('--scope <scope>', 'a scope it accepts (repeatable; default: openid email profile)', collect)
  .option('--client <id>', 'the website it belongs to: its credentials may introspect the tokens issued for it')
  .option('--signing-alg <alg>', 'algorithm of its access tokens: RS256 (default), ES256 or EdDSA')
  .action(async (resource: string, options: { name: string; scope?: string[]; client?: string; signingAlg?: string }, c: Command) => {
    const body = { resource, name: options.name, scopes: options.scope, client_id: options.client, signing_alg: options.signingAlg };
    const data = (await request(globals(c), 'POST', '/resources', body)) as Row;
    print(c, data, (row) => printTable([row], RESOURCE_COLUMNS));
  });
resourcesCommand
  .command('list')
  .description('list the resources')
  .action(async (_options, c: Command) => {
    const data = (await request(globals(c), 'GET', '/resources')) as { resources: Row[] };
    print(c, data, ({ resources }) => printTable(resources, RESOURCE_COLUMNS));
  });
resourcesCommand
  .command('remove <resource>')
  .description('remove a resource: the grants issued for it end')
  .action(async (resource: string, _options, c: Command) => {
    await request(globals(c), 'DELETE', `/resources/${segment(resource)}`);
    print(c, { removed: resource }, () => console.log(`removed ${show(resource)}`));
  });

// The server's own defaults (src/config.ts), so the two cannot drift apart.
const defaultUrl = process.env.AGENT_AUTH_ADMIN_URL || `http://127.0.0.1:${process.env.ADMIN_PORT || DEFAULT_ADMIN_PORT}`;

// The package's version, from the package.json two floors up (src/ or dist/ alike).
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

const program = new Command('agent-auth')
  .version(version)
  .description('Manage the websites (clients) and agents registered with an agent-auth server, their sign-ins and the audit log.')
  .option('--url <url>', 'admin API base URL (env AGENT_AUTH_ADMIN_URL)', defaultUrl)
  // No default value: --help would print the token.
  .option('--token <token>', 'admin token (env ADMIN_TOKEN, else $DATA_DIR/admin-token)')
  .option('--json', 'print the raw JSON responses')
  .option('--env', "print one record's ids and secrets as shell lines (export CLIENT_ID='…'), for eval \"$(agent-auth --env …)\"")
  .addCommand(
    withClientAgents(
      resourceCommand({
        plural: 'clients',
        singular: 'client',
        secretField: 'client_secret',
        columns: ['client_id', 'name', 'active', 'redirect_uris'],
        fields: [
          { flags: '--name <name>', description: 'display name of the website', key: 'name', create: 'required', update: true },
          {
            flags: '--redirect-uri <uri>',
            description: 'redirect URI, https or http on localhost (repeatable)',
            key: 'redirect_uris',
            parse: collect,
            create: 'required',
            update: true,
          },
          {
            flags: '--id-token-alg <alg>',
            description: 'algorithm of its ID tokens: RS256 (the default, recommended), ES256 or EdDSA; "default" goes back to RS256',
            key: 'id_token_signed_response_alg',
            clear: 'default',
            create: 'optional',
            update: true,
          },
          {
            flags: '--backchannel-logout-uri <uri>',
            description: 'where it hears that a grant ended (back-channel logout; https, or http on localhost); "none" to stop',
            key: 'backchannel_logout_uri',
            clear: 'none',
            create: 'optional',
            update: true,
          },
          {
            flags: '--owner-sign-in <bool>',
            description: 'true: its sign-in page offers "Sign in as the owner", for an app people use themselves',
            key: 'owner_sign_in',
            parse: parseBool,
            create: 'optional',
            update: true,
          },
          {
            flags: '--dpop-bound <bool>',
            description: 'true: it must use DPoP (RFC 9449): token requests without a DPoP proof are refused',
            key: 'dpop_bound_access_tokens',
            parse: parseBool,
            create: 'optional',
            update: true,
          },
          {
            flags: '--dpop-nonce <bool>',
            description: 'true: its DPoP proofs must carry a server nonce (RFC 9449 §8), at /token and at /userinfo',
            key: 'dpop_nonce_required',
            parse: parseBool,
            create: 'optional',
            update: true,
          },
        ],
      }),
    ),
  )
  .addCommand(
    withAgentKeys(
      withAgentGrants(
        resourceCommand({
          plural: 'agents',
          singular: 'agent',
          secretField: 'agent_secret',
          columns: ['agent_id', 'email', 'name', 'active'],
          fields: [
            { flags: '--email <email>', description: "email of the agent's user", key: 'email', create: 'required' },
            { flags: '--name <name>', description: 'display name of the agent', key: 'name', create: 'optional', update: true },
            {
              flags: '--secret-enabled <bool>',
              description: 'false: key-only, the agent signs in with its keys and its secret is refused',
              key: 'secret_enabled',
              parse: parseBool,
              update: true,
            },
          ],
        }),
      ),
    ),
  )
  .addCommand(usersCommand)
  .addCommand(grantsCommand)
  .addCommand(auditCommand)
  .addCommand(keysCommand)
  .addCommand(logoutCommand)
  .addCommand(resourcesCommand);

program.parseAsync().catch((err: unknown) => {
  console.error(`error: ${escapeControls(err instanceof Error ? err.message : String(err))}`);
  process.exitCode = 1;
});
