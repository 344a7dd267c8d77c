import fc from 'fast-check';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { Queryable } from '../../src/db/types.js';
import { basicAuth } from './codes.js';
import type { TestServer } from './server.js';

/**
 * Property-based request fuzzing: generators mix valid values (fixtures of the test server,
 * named by `Ref`s and resolved only when the request is sent) with hostile ones, so that runs
 * reach past the schema into the handlers and the store.
 */

/** A fixture value by name, optionally transformed; shows as `ref(name)` in counterexamples. */
export class Ref {
  constructor(
    readonly name: string,
    readonly transform?: { label: string; apply: (value: string) => string },
  ) {}

  [fc.toStringMethod]() {
    return this.transform ? `ref(${this.name}|${this.transform.label})` : `ref(${this.name})`;
  }
}

/** A value built from a generated input once its Refs are resolved (a signed JWT from its header and claims). */
export class Derived<I = unknown> {
  constructor(
    readonly label: string,
    readonly input: I,
    readonly build: (resolved: I) => unknown,
  ) {}

  [fc.toStringMethod]() {
    return `${this.label}(${fc.stringify(this.input)})`;
  }
}

export type Fixtures = Record<string, unknown>;

/** Replaces every Ref in a generated value with the fixture's current value. */
function resolve(value: unknown, fixtures: Fixtures): unknown {
  if (value instanceof Derived) return value.build(resolve(value.input, fixtures));
  if (value instanceof Ref) {
    if (!(value.name in fixtures)) throw new Error(`no fixture ${value.name}`);
    const real = fixtures[value.name];
    return value.transform ? value.transform.apply(String(real)) : real;
  }
  if (Array.isArray(value)) return value.map((v) => resolve(v, fixtures));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      // defineProperty, so a generated "__proto__" key stays an own property.
      Object.defineProperty(out, k, { value: resolve(v, fixtures), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

const MUTATIONS: { label: string; apply: (value: string) => string }[] = [
  { label: 'suffix', apply: (v) => `${v}x` },
  { label: 'truncated', apply: (v) => v.slice(0, -1) },
  { label: 'upper', apply: (v) => v.toUpperCase() },
  { label: 'padded', apply: (v) => ` ${v} ` },
  { label: 'nul', apply: (v) => `${v}\u0000` },
  { label: 'doubled', apply: (v) => v + v },
  { label: 'homoglyph', apply: (v) => v.replace(/a/, '\u0430') },
];

/** The fixture as is, most of the time. */
export const ref = (name: string): fc.Arbitrary<Ref> => fc.constant(new Ref(name));
/** The fixture changed a little: off by one character, padded, upper-cased, with a NUL... */
const mutated = (name: string): fc.Arbitrary<Ref> => fc.constantFrom(...MUTATIONS).map((m) => new Ref(name, m));

const NASTY = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '%00',
  '\ud800',
  'x\udfffy',
  '\ufffe',
  '\uFEFF',
  '\u202e',
  '\u0085',
  '\r\n',
  '\t',
  '🙂',
  'e\u0301',
  'ＡＢＣ',
  'İ',
  'ß',
  '"',
  "'",
  '\\',
  '<script>alert(1)</script>',
  "' OR '1'='1' --",
  '${x}',
  '{{x}}',
  'null',
  'undefined',
  'true',
  '0',
  '-1',
  'NaN',
  '1e309',
  '[]',
  '{}',
  '__proto__',
  'constructor',
  'toString',
  '../../etc/passwd',
  '/',
  '?',
  '#',
  '&',
  '=',
  '+',
  '%',
  '%zz',
  '%E0%A4%A',
  'a'.repeat(43),
  'Bearer',
  'Basic',
];

/** Hostile strings: random text of every unit, control characters, NULs, lone surrogates, huge values. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(...NASTY),
  fc.tuple(fc.string({ maxLength: 10 }), fc.constantFrom(...NASTY), fc.string({ maxLength: 10 })).map((p) => p.join('')),
  fc
    .tuple(fc.constantFrom(43, 128, 129, 199, 200, 201, 500, 501, 2000, 2001, 4097, 9000), fc.constantFrom('a', 'é', '\u0000', '🙂', '%'))
    .map(([n, c]) => c.repeat(n)),
);

/** Any JSON value where a string belongs: wrong types, arrays for strings, nested objects, nulls. */
export const wrongType: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.constant({ $ne: null }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
  fc.jsonValue({ maxDepth: 3 }),
);

/**
 * What may stand where a valid value belongs: nothing, hostile text, repeated values (`a=1&a=2`,
 * or an array in JSON), the fixture `like` names slightly changed, and with `json` any wrong type.
 */
export function hostile(options: { like?: string; json?: boolean } = {}): fc.Arbitrary<unknown> {
  const choices: fc.WeightedArbitrary<unknown>[] = [
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 3, arbitrary: nastyString },
    { weight: 1, arbitrary: fc.array(nastyString, { minLength: 2, maxLength: 3 }) },
  ];
  if (options.like) {
    choices.push({ weight: 2, arbitrary: mutated(options.like) });
    choices.push({ weight: 1, arbitrary: fc.tuple(ref(options.like), nastyString).map((pair) => [...pair]) });
  }
  if (options.json) choices.push({ weight: 3, arbitrary: wrongType });
  return fc.oneof(...choices);
}

/** Per field: the valid values (fixtures mostly) and the hostile ones. */
export type FieldSpec = Record<string, [valid: fc.Arbitrary<unknown>, bad: fc.Arbitrary<unknown>]>;

/**
 * A record that is valid but for a few fields, so that most runs get past the schema and reach
 * the handler's own checks and the store: none, one, or any subset of fields turned hostile.
 */
export function mostlyValid(fields: FieldSpec) {
  const keys = Object.keys(fields);
  const broken = fc.oneof(
    { weight: 3, arbitrary: fc.constant<string[]>([]) },
    { weight: 4, arbitrary: fc.subarray(keys, { minLength: 1, maxLength: 1 }) },
    { weight: 3, arbitrary: fc.subarray(keys) },
  );
  const both = fc.record(Object.fromEntries(keys.map((k) => [k, fc.tuple(fields[k][0], fields[k][1])])));
  return fc.tuple(broken, both, extraParams).map(([bad, values, extra]) => {
    const out: Record<string, unknown> = { ...extra };
    for (const k of keys) out[k] = values[k][bad.includes(k) ? 1 : 0];
    return out;
  });
}

/** Unknown parameters, including names that mean something to JavaScript objects. */
const extraParams: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({}) },
  {
    weight: 1,
    arbitrary: fc.dictionary(
      fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'a[b]', 'a[]', '')),
      nastyString,
      { minKeys: 1, maxKeys: 3 },
    ),
  },
);

/** Percent-encoding that survives lone surrogates (encoded as U+FFFD, as a UTF-8 client would). */
export function pct(value: string): string {
  return encodeURIComponent(Buffer.from(value, 'utf8').toString('utf8'));
}

/** Raw query fragments no well-behaved encoder writes. */
export const rawQueryFragments = fc.array(
  fc.constantFrom(
    '',
    '&',
    '&&',
    '=',
    '=x',
    'client_id',
    'request_id',
    'x=%',
    'x=%zz',
    'x=%E0%A4%A',
    'x=%C0%80',
    'x=%ED%A0%80',
    'x=%00',
    'a=b=c',
    ';',
    '+',
    'x[y]=z',
  ),
  { maxLength: 3 },
);

/** `a=1&a=2` for arrays, nothing for undefined; values are resolved already. */
export function urlencoded(params: Record<string, unknown>, raw: string[] = []): string {
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) {
      // What a careless client would send for a nested value: its JSON (String() throws on some).
      pairs.push(`${pct(key)}=${pct(typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v))}`);
    }
  }
  return [...pairs, ...raw].join('&');
}

/** A header value an HTTP client can send: UTF-8 bytes as latin1, without CR, LF or NUL. */
export function headerValue(value: string): string {
  return Buffer.from(value, 'utf8')
    .toString('latin1')
    .replace(/[\r\n\0]/g, '');
}

/** Bodies over Fastify's 64 KiB bodyLimit: must be a 413 in the error format. */
export const HUGE = 'x'.repeat(70 * 1024);

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'Application/JSON',
  'application/json; charset=utf-16',
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded; charset=iso-8859-1',
  'text/plain',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  'application/jsonx',
  ';;;',
  '',
];

// Malformed JSON text, and valid text no encoder writes (duplicate keys, a BOM, prototype keys).
const MALFORMED_JSON = [
  '',
  '{',
  '}',
  '{"request_id":',
  'nul',
  '[1,2',
  '{"a":1,}',
  "{'a':1}",
  '{"a":"\\u00"}',
  '\u0000',
  '"\\ud800"',
  'NaN',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"a":1}{"b":2}',
  '1e999999',
  `${'['.repeat(5000)}${']'.repeat(5000)}`,
  '\uFEFF{}',
  '{"request_id":"x","request_id":["y"]}',
];

export type Response = LightMyRequestResponse;

function preview(res: Response): string {
  return `${res.statusCode} ${String(res.headers['content-type'])} ${res.body.slice(0, 300)}`;
}

/** 4xx JSON `{error, error_description}`, both non-empty strings and nothing else. */
export function expectJsonError(res: Response) {
  expect(res.statusCode, preview(res)).toBeGreaterThanOrEqual(400);
  expect(res.statusCode, preview(res)).toBeLessThan(500);
  expect(res.headers['content-type'], preview(res)).toMatch(/^application\/json/);
  const body = JSON.parse(res.body);
  expect(Object.keys(body).sort(), preview(res)).toEqual(['error', 'error_description']);
  expect(body.error, preview(res)).toMatch(/^[a-z_]+$/);
  expect(typeof body.error_description === 'string' && body.error_description.length > 0, preview(res)).toBe(true);
}

/** The browser routes' 4xx: the HTML error page naming the code, never a redirect. */
export function expectHtmlError(res: Response) {
  expect(res.statusCode, preview(res)).toBeGreaterThanOrEqual(400);
  expect(res.statusCode, preview(res)).toBeLessThan(500);
  expect(res.headers['content-type'], preview(res)).toMatch(/^text\/html/);
  expect(res.headers.location, preview(res)).toBeUndefined();
  expect(res.body, preview(res)).toMatch(/<code id="error-code">[a-z_]+<\/code>/);
}

/** The code an error response names, JSON or HTML; undefined for successes. */
export function errorCode(res: Response): string | undefined {
  if (res.statusCode < 400) return undefined;
  if (String(res.headers['content-type']).startsWith('text/html')) {
    return /<code id="error-code">([a-z_]+)<\/code>/.exec(res.body)?.[1];
  }
  return res.body ? (JSON.parse(res.body) as { error?: string }).error : undefined;
}

type Snapshot = Map<string, string>;

const snapshotReady = new WeakMap<Queryable, Promise<void>>();

// The audit log records refusals too (failed agent authentications, replays): it is meant to grow.
const LOGS = ['audit_events'];

/**
 * The snapshot query, kept in a function of the store's schema (fuzz_snapshot) so that it is planned
 * once per connection rather than on every run: a fourth of its cost on PGlite, where every run of
 * every fuzz test takes one or two.
 */
async function createSnapshotFunction(db: Queryable): Promise<void> {
  const { rows: tables } = await db.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
     WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> ALL($1) ORDER BY table_name`,
    [LOGS],
  );
  const sql = tables
    .map(({ name }) => {
      const table = `"${name.replace(/"/g, '""')}"`;
      return `SELECT '${name.replace(/'/g, "''")}'::text, count(*)::text || ':' || md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM ${table} t`;
    })
    .join(' UNION ALL ');
  await db.query(
    `CREATE OR REPLACE FUNCTION fuzz_snapshot() RETURNS TABLE (t_name text, t_sum text) LANGUAGE plpgsql AS $fuzz$
     BEGIN RETURN QUERY ${sql}; END $fuzz$`,
  );
}

/** Row count and an md5 of every row, per table of the store's schema but the logs (listed once per store). */
export async function snapshot(db: Queryable): Promise<Snapshot> {
  let ready = snapshotReady.get(db);
  if (!ready) {
    ready = createSnapshotFunction(db);
    snapshotReady.set(db, ready);
  }
  await ready;
  const { rows } = await db.query<{ name: string; sum: string }>('SELECT t_name AS name, t_sum AS sum FROM fuzz_snapshot()');
  return new Map(rows.map((r) => [r.name, r.sum]));
}

function changedTables(before: Snapshot, after: Snapshot): string[] {
  return [...after.keys()].filter((t) => before.get(t) !== after.get(t));
}

/**
 * Every endpoint gets at least this many generated requests (issue 4: thousands to every endpoint
 * across the suite); a file's `numRuns` may ask for more. Sized so that the whole fuzz set
 * (test/fuzz-*.test.ts) stays near a minute per store on a 2-core machine.
 */
export const MIN_RUNS = 1000;
/**
 * FUZZ_SCALE multiplies every endpoint's runs: FUZZ_SCALE=10 for a longer hunt than the suite's
 * budget allows (minutes per store), FUZZ_SCALE=0.1 for a quick local pass. Timeouts follow it.
 */
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
/** For `describe(…, { timeout })`: a busy machine may need well over the default for a property's runs. */
export const FUZZ_TIMEOUT = 120_000 * Math.max(1, SCALE);

export interface Sent<T> {
  input: T;
  res: Response;
}

export interface FuzzOptions<T> {
  app: FastifyInstance;
  db: Queryable;
  arbitrary: fc.Arbitrary<T>;
  /** Requests to send, examples included; at least MIN_RUNS, times FUZZ_SCALE. */
  numRuns: number;
  /** The fixtures the Refs name, read when each request is sent. */
  fixtures: () => Fixtures;
  request(input: T): InjectOptions;
  /** The response's format; runs before the store check. */
  check(sent: Sent<T>): void;
  /** The endpoint never writes, whatever it answers. */
  readOnly?: boolean;
  /** Tables a refused request may change by design (e.g. a replayed code revokes its grant). */
  mayChange?(sent: Sent<T>): string[];
  /** Called before the next run when a run changed rows, so that fixtures are usable again. */
  refresh?(): Promise<void>;
  /** Inputs sent first, before the generated ones: the paths an assertion needs reached every run. */
  examples?: T[];
  /** A success that must have written nothing all the same (a revocation that found nothing left to revoke). */
  unchanged?(sent: Sent<T>): boolean;
}

export interface FuzzReport {
  statuses: Map<number, number>;
  codes: Map<string, number>;
}

/**
 * Sends `numRuns` generated requests. Every answer is below 500 and passes `check`; a refused
 * one (or any answer of a read-only endpoint) leaves every table as it was. Returns what the
 * runs reached, so callers can assert that the generators got past the schema layer.
 */
export async function fuzz<T>(options: FuzzOptions<T>): Promise<FuzzReport> {
  const { app, db } = options;
  const report: FuzzReport = { statuses: new Map(), codes: new Map() };
  let known: Snapshot | undefined;
  let dirty = false;

  await fc.assert(
    fc.asyncProperty(options.arbitrary, async (input) => {
      if (dirty) {
        await options.refresh?.();
        dirty = false;
        known = undefined;
      }
      const before = known ?? (await snapshot(db));
      known = undefined;
      const resolved = resolve(input, options.fixtures()) as T;
      const res = await app.inject(options.request(resolved));
      const sent = { input: resolved, res };
      report.statuses.set(res.statusCode, (report.statuses.get(res.statusCode) ?? 0) + 1);

      const after = await snapshot(db);
      const changed = changedTables(before, after);
      if (changed.length > 0) dirty = true;

      expect(res.statusCode, preview(res)).toBeLessThan(500);
      options.check(sent);
      const code = errorCode(res);
      if (code) report.codes.set(code, (report.codes.get(code) ?? 0) + 1);
      if (res.statusCode >= 400 || options.readOnly || options.unchanged?.(sent)) {
        const allowed = res.statusCode >= 400 ? (options.mayChange?.(sent) ?? []) : [];
        expect(
          changed.filter((t) => !allowed.includes(t)),
          `rows changed by: ${preview(res)}`,
        ).toEqual([]);
      }
      known = after;
    }),
    { numRuns: Math.max(1, Math.round(Math.max(options.numRuns, MIN_RUNS) * SCALE)), examples: options.examples?.map((input) => [input] as [T]) },
  );
  return report;
}

/** Methods a route does not answer (HEAD is left out: it has no body to check). */
export function otherMethods(method: 'GET' | 'POST') {
  const all = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
  return all.filter((m) => m !== method);
}

/** A request body as generated: well-formed or not, under any content type. */
export type Body =
  | { kind: 'json'; value: unknown; contentType?: string }
  | { kind: 'form'; value: Record<string, unknown>; raw: string[]; contentType?: string }
  | { kind: 'text'; text: string; contentType?: string };

const contentType = (usual: string) =>
  fc.oneof({ weight: 8, arbitrary: fc.constant(usual) }, { weight: 2, arbitrary: fc.option(fc.constantFrom(...CONTENT_TYPES), { nil: undefined }) });

/**
 * Bodies for an endpoint whose fields `fields` generates: as JSON and as a form (under their own
 * or a wrong content type), a JSON value of the wrong shape, malformed JSON, random text, and
 * bodies over the size limit.
 */
export function bodies(fields: fc.Arbitrary<Record<string, unknown>>, usual: 'json' | 'form'): fc.Arbitrary<Body> {
  const json = fields.chain((value) => contentType('application/json').map((ct): Body => ({ kind: 'json', value, contentType: ct })));
  const form = fc
    .tuple(fields, rawQueryFragments, contentType('application/x-www-form-urlencoded'))
    .map(([value, raw, ct]): Body => ({ kind: 'form', value, raw, contentType: ct }));
  const text = (t: fc.Arbitrary<string>) =>
    fc
      .tuple(t, contentType(usual === 'json' ? 'application/json' : 'application/x-www-form-urlencoded'))
      .map(([body, ct]): Body => ({ kind: 'text', text: body, contentType: ct }));
  return fc.oneof(
    { weight: usual === 'json' ? 14 : 3, arbitrary: json },
    { weight: usual === 'form' ? 14 : 3, arbitrary: form },
    {
      weight: 1,
      arbitrary: wrongType.chain((value) => contentType('application/json').map((ct): Body => ({ kind: 'json', value, contentType: ct }))),
    },
    { weight: 1, arbitrary: text(fc.constantFrom(...MALFORMED_JSON)) },
    { weight: 1, arbitrary: text(fc.string()) },
    { weight: 1, arbitrary: text(fc.constantFrom(HUGE, `{"model":"${HUGE}"}`, `token=${HUGE}`)) },
  );
}

/** The payload and content type of a resolved body. */
export function encodeBody(body: Body): { payload: string; headers: Record<string, string> } {
  const headers: Record<string, string> = body.contentType === undefined ? {} : { 'content-type': body.contentType };
  if (body.kind === 'json') return { payload: JSON.stringify(body.value) ?? '', headers };
  if (body.kind === 'form') return { payload: urlencoded(body.value, body.raw), headers };
  return { payload: body.text, headers };
}

/** The runs got past the schema layer: each of these statuses and error codes came up at least once. */
export function expectReached(report: FuzzReport, expected: { statuses?: number[]; codes?: string[] }) {
  const seen = `statuses ${JSON.stringify([...report.statuses])}, codes ${JSON.stringify([...report.codes])}`;
  for (const status of expected.statuses ?? []) expect(report.statuses.has(status), `${status} never came up: ${seen}`).toBe(true);
  for (const code of expected.codes ?? []) expect(report.codes.has(code), `${code} never came up: ${seen}`).toBe(true);
}

/** Fixtures `{a,b,inactive}_client_{id,secret}`, `…_basic` and `…_redirect_uri` for the endpoints that authenticate clients. */
export async function clientFixtures(server: TestServer): Promise<Fixtures> {
  const fixtures: Fixtures = {};
  for (const who of ['a', 'b', 'inactive']) {
    const client = await server.createClient();
    if (who === 'inactive') await server.adminCall('PATCH', `/admin/clients/${client.client_id}`, { active: false });
    Object.assign(fixtures, {
      [`${who}_client_id`]: client.client_id,
      [`${who}_client_secret`]: client.client_secret,
      [`${who}_basic`]: basicAuth(client),
      [`${who}_redirect_uri`]: client.redirect_uris[0],
    });
  }
  return fixtures;
}

/** Whose credentials a request presents (client `a` mostly) and how: body, HTTP Basic, both (refused) or none. */
export const clientPersona = fc.record({
  who: fc.constantFrom('a', 'a', 'a', 'a', 'b', 'inactive'),
  how: fc.constantFrom('body', 'body', 'body', 'basic', 'basic', 'both', 'none'),
});
export type ClientPersona = { who: string; how: string };

/** The body half of client authentication (client_secret_post). */
export function clientFields({ who, how }: ClientPersona): FieldSpec {
  const inBody = how === 'body' || how === 'both';
  const secret = fc.oneof({ weight: 5, arbitrary: ref(`${who}_client_secret`) }, ref('b_client_secret'));
  return {
    client_id: [inBody ? ref(`${who}_client_id`) : fc.constant(undefined), hostile({ like: `${who}_client_id` })],
    client_secret: [inBody ? secret : fc.constant(undefined), hostile({ like: `${who}_client_secret` })],
  };
}

const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/** The header half: the client's Basic credentials, or Basic (and other schemes) with garbage. */
export function authorizationHeader({ who, how }: ClientPersona): fc.Arbitrary<unknown> {
  const garbage = fc.oneof(
    fc.constantFrom('Basic', 'Basic ', 'Basic !!!!', 'basic   Og==', 'Basic\tOg==', 'Bearer abc', 'Digest x', `Basic ${base64('no-colon')}`),
    fc.constantFrom(':', '%zz:%', 'a:b:c', '%00:%00', 'x:', ':y', '\u0000:\u0000').map((v) => `Basic ${base64(v)}`),
    fc.tuple(nastyString, nastyString).map(([id, secret]) => `Basic ${base64(`${id}:${secret}`)}`),
    nastyString.map((v) => `Basic ${v}`),
    nastyString,
  );
  const usual = how === 'basic' || how === 'both' ? ref(`${who}_basic`) : fc.constant(undefined);
  return fc.oneof({ weight: 6, arbitrary: usual }, { weight: 1, arbitrary: garbage });
}

/** An `Authorization` header entry for inject, or none. */
export function authorization(value: unknown): Record<string, string> {
  return typeof value === 'string' ? { authorization: headerValue(value) } : {};
}

// The admin API: one request shape for every route, an `:id` in the path, a query, a body and the token.

/** The admin token (fixture `admin_token`, "Bearer …") mostly; sometimes missing, mangled or under another scheme. */
export function adminAuthorization(token: string): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 12, arbitrary: ref('admin_token') },
    { weight: 1, arbitrary: fc.constant(undefined) },
    {
      weight: 2,
      arbitrary: fc.oneof(fc.constantFrom(`bearer ${token}`, `Bearer  ${token}`, `Basic ${token}`, token), hostile({ like: 'admin_token' })),
    },
  );
}

/** Path segments as sent, percent-encoding errors and all (null: the generated id, encoded). */
export const rawSegment: fc.Arbitrary<string | null> = fc.option(
  fc.constantFrom('%', '%zz', '%E0%A4%A', '%C0%80', '%00', '.', '..', '', 'a/b', '%2F', 'x?y=%', 'a'.repeat(201)),
  { freq: 8 },
);

export interface AdminInput {
  method: string;
  /** The `:id` of the route, percent-encoded when sent; unused by routes without one. */
  id: unknown;
  /** A path segment sent as is instead of the id. */
  rawId: string | null;
  query: Record<string, unknown>;
  raw: string[];
  /** None: no payload and no content type. */
  body: Body | undefined;
  authorization: unknown;
}

/** Generated admin calls: only `method` is required; the rest defaults to nothing but the token. */
export function adminInputs(spec: {
  token: string;
  method: fc.Arbitrary<string>;
  id?: fc.Arbitrary<unknown>;
  query?: fc.Arbitrary<Record<string, unknown>>;
  body?: fc.Arbitrary<Body | undefined>;
}): fc.Arbitrary<AdminInput> {
  return fc.record({
    method: spec.method,
    id: spec.id ?? fc.constant(undefined),
    rawId: spec.id ? rawSegment : fc.constant(null),
    query: spec.query ?? extraParams,
    raw: spec.query ? rawQueryFragments : fc.constant([]),
    body: spec.body ?? fc.constant(undefined),
    authorization: adminAuthorization(spec.token),
  });
}

/** An input written by hand (for `examples`): the usual token, no query, no body. */
export function adminExample(input: Partial<AdminInput> & { method: string }): AdminInput {
  return { id: undefined, rawId: null, query: {}, raw: [], body: undefined, authorization: new Ref('admin_token'), ...input };
}

/**
 * Hand-written admin inputs sent before the generated ones, so that every status an assertion names
 * comes up whatever the seed: the valid calls, then the first without a token, with a wrong one and
 * with `wrongMethod`; with `id`, an unknown, an over-long, a badly encoded and a NUL id; with
 * `bodies`, an over-large body, an unsupported content type and malformed JSON.
 */
export function adminExamples(valid: AdminInput[], options: { id?: boolean; bodies?: boolean; wrongMethod?: string } = {}): AdminInput[] {
  const [first] = valid;
  const out = [...valid, { ...first, authorization: undefined }, { ...first, authorization: 'Bearer not-the-admin-token' }];
  if (options.wrongMethod) out.push({ ...first, method: options.wrongMethod, body: undefined });
  if (options.id)
    out.push({ ...first, id: 'no-such-id' }, { ...first, rawId: 'a'.repeat(201) }, { ...first, rawId: '%zz' }, { ...first, id: 'nul\u0000' });
  if (options.bodies) {
    for (const [text, contentType] of [
      [HUGE, 'application/json'],
      ['x', 'text/plain'],
      ['{', 'application/json'],
    ]) {
      out.push({ ...first, body: { kind: 'text', text, contentType } });
    }
  }
  return out;
}

/** The request for `route` ("/admin/clients/:id/secret") with the resolved input's id, query, body and header. */
export function adminRequest(route: string, input: AdminInput): InjectOptions {
  const { id, rawId, body } = input;
  const segment = rawId ?? pct(typeof id === 'string' ? id : (JSON.stringify(id) ?? ''));
  const query = urlencoded(input.query, input.raw);
  const url = `${route.replace(':id', segment)}${query ? `?${query}` : ''}`;
  const encoded = body === undefined || input.method === 'OPTIONS' ? { headers: {} } : encodeBody(body);
  return { method: input.method as 'GET', url, ...encoded, headers: { ...encoded.headers, ...authorization(input.authorization) } };
}

/** The value a server reads for a generated query or body string (lone surrogates arrive as U+FFFD). */
export function asSent(value: string): string {
  return Buffer.from(value, 'utf8').toString('utf8');
}

/** The URL parser sent the request elsewhere: a raw segment, or an id that is a dot segment ("..", "%2E"). */
export function rerouted(input: AdminInput): boolean {
  if (input.rawId !== null) return true;
  const segment = typeof input.id === 'string' ? pct(input.id).replace(/%2e/gi, '.') : '';
  return segment === '.' || segment === '..';
}

/** A body for a route that takes none: none mostly, else anything under any content type (a JSON `{}` passes). */
export const strayBody: fc.Arbitrary<Body | undefined> = fc.option(
  bodies(
    fc.oneof(
      { weight: 3, arbitrary: fc.constant({}) },
      fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('__proto__', 'id', 'email')), nastyString, { minKeys: 1, maxKeys: 3 }),
    ),
    'json',
  ),
  { freq: 3, nil: undefined },
);
