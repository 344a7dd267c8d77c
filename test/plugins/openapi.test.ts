import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../examples/agent/agent.js';
import { describeInChromium } from '../helpers/chromium.js';
import { storeName } from '../helpers/database.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { ISSUER, startTestServer, type TestServer } from '../helpers/server.js';

interface Operation {
  description?: string;
  tags?: string[];
  parameters?: { name: string; in: string; required?: boolean }[];
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: { properties?: Record<string, unknown> } }> }>;
}
type Document = {
  openapi: string;
  info: { title: string; version: string };
  servers: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
};

// Every public endpoint (docs/protocol.md's, and the browser steps), and whether it can fail with a 4xx.
const ENDPOINTS: [method: string, path: string, fails: boolean][] = [
  ['get', '/authorize', true],
  ['get', '/authorize/complete', true],
  ['post', '/authorize/decision', true],
  ['get', '/authorize/owner', true],
  ['post', '/authorize/owner/email-link', true],
  ['get', '/authorize/owner/email-link', true],
  ['post', '/authorize/owner/email-link/use', true],
  ['post', '/authorize/owner/decision', true],
  ['post', '/token', true],
  ['get', '/userinfo', true],
  ['post', '/userinfo', true],
  ['post', '/introspect', true],
  ['post', '/revoke', true],
  ['post', '/api/agent/authenticate', true],
  ['get', '/api/check-status', true],
  ['get', '/.well-known/oauth-authorization-server', false],
  ['get', '/.well-known/openid-configuration', false],
  ['get', '/.well-known/jwks.json', false],
  ['get', '/.well-known/http-message-signatures-directory', false],
  ['get', '/api/agents/by-signing-key/{kid}', true],
  ['post', '/register', true],
  ['get', '/agents/{agent_id}/client-metadata.json', true],
  ['post', '/account/email-link', true],
  ['get', '/account/email-link/callback', true],
  ['post', '/account/email-link/callback', true],
  ['post', '/account/sign-out', true],
  ['get', '/account/api/me', true],
  ['patch', '/account/api/me', true],
  ['post', '/account/api/me/email', true],
  ['get', '/account/api/agents', true],
  ['post', '/account/api/agents', true],
  ['patch', '/account/api/agents/{id}', true],
  ['delete', '/account/api/agents/{id}', true],
  ['post', '/account/api/agents/{id}/secret', true],
  ['post', '/account/api/agents/{id}/keys', true],
  ['get', '/account/api/agents/{id}/keys', true],
  ['delete', '/account/api/agents/{id}/keys/{kid}', true],
  ['post', '/account/api/agents/{id}/signing-keys', true],
  ['get', '/account/api/agents/{id}/signing-keys', true],
  ['delete', '/account/api/agents/{id}/signing-keys/{kid}', true],
  ['delete', '/account/api/agents/{id}/websites/{client_id}', true],
  ['post', '/account/api/revoke-all', true],
  ['post', '/account/passkey/options', true],
  ['post', '/account/passkey/sign-in', true],
  ['post', '/account/api/passkeys/registration-options', true],
  ['post', '/account/api/passkeys', true],
  ['patch', '/account/api/passkeys/{id}', true],
  ['delete', '/account/api/passkeys/{id}', true],
  ['post', '/account/api/reauthenticate/options', true],
  ['post', '/account/api/reauthenticate', true],
  ['get', '/account/api/approvals', true],
  ['post', '/account/api/approvals/{request_id}/options', true],
  ['post', '/account/api/approvals/{request_id}', true],
  ['get', '/account/api/history', true],
  ['get', '/healthz', false],
  ['get', '/readyz', false],
];

describe(`OpenAPI description (${storeName})`, () => {
  let server: TestServer;
  let doc: Document;
  beforeAll(async () => {
    server = await startTestServer();
    const res = await server.app.inject({ url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    doc = res.json();
  });
  afterAll(() => server.close());

  it('is a valid OpenAPI 3 document titled agent-auth, at the package version, served from the issuer', async () => {
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(doc.openapi).toMatch(/^3\./);
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    expect(doc.info).toMatchObject({ title: 'agent-auth', version });
    expect(doc.servers).toEqual([{ url: ISSUER }]);
  });

  it('describes exactly the public endpoints, each with a description and a tag', () => {
    expect(Object.keys(doc.paths).sort()).toEqual([...new Set(ENDPOINTS.map(([, path]) => path))].sort());
    for (const [method, path] of ENDPOINTS) {
      const operation = doc.paths[path]?.[method];
      expect(operation, `${method} ${path}`).toBeDefined();
      expect(operation.description?.length, `${method} ${path}`).toBeGreaterThan(20);
      expect(operation.tags?.length, `${method} ${path}`).toBeGreaterThan(0);
    }
  });

  it('documents the 4xx answers of every endpoint that can fail, JSON ones with {error, error_description}', () => {
    for (const [method, path] of ENDPOINTS.filter(([, , fails]) => fails)) {
      const responses = doc.paths[path][method].responses;
      const failures = Object.keys(responses).filter((status) => status.startsWith('4'));
      expect(failures.length, `${method} ${path}`).toBeGreaterThan(0);
      for (const status of failures) {
        expect(responses[status].description, `${method} ${path} ${status}`).not.toBe('Default Response');
        const json = responses[status].content?.['application/json'];
        if (json) expect(Object.keys(json.schema.properties ?? {})).toEqual(['error', 'error_description']);
        else expect(Object.keys(responses[status].content ?? {})).toEqual(['text/html']);
      }
    }
    expect(Object.keys(doc.paths['/readyz'].get.responses)).toEqual(['200', '503']);
    expect(Object.keys(doc.paths['/api/agent/authenticate'].post.responses)).toEqual([
      '200',
      '400',
      '401',
      '403',
      '404',
      '409',
      '413',
      '415',
      '429',
      '503',
    ]);
    expect(Object.keys(doc.paths['/token'].post.responses)).toEqual(['200', '400', '401', '413', '415', '429', '503']);
    for (const path of ['/introspect', '/revoke'])
      expect(Object.keys(doc.paths[path].post.responses)).toEqual(expect.arrayContaining(['413', '415']));
    expect(Object.keys(doc.paths['/authorize/complete'].get.responses)).toContain('302');
  });

  it('documents parameters and bodies', () => {
    const query = (path: string) => doc.paths[path].get.parameters?.filter((p) => p.in === 'query').map((p) => p.name);
    expect(query('/authorize')).toEqual([
      'client_id',
      'redirect_uri',
      'response_type',
      'state',
      'code_challenge',
      'code_challenge_method',
      'scope',
      'login_hint',
      'nonce',
      'resource',
      'dpop_jkt',
    ]);
    expect(doc.paths['/api/check-status'].get.parameters).toContainEqual(
      expect.objectContaining({ name: 'request_id', in: 'query', required: true }),
    );

    const token = doc.paths['/token'].post.requestBody!.content;
    expect(Object.keys(token).sort()).toEqual(['application/json', 'application/x-www-form-urlencoded']);
    expect(Object.keys(token['application/x-www-form-urlencoded'].schema.properties!)).toEqual(
      expect.arrayContaining(['grant_type', 'code', 'redirect_uri', 'code_verifier', 'refresh_token', 'client_id', 'client_secret']),
    );
    const authenticate = doc.paths['/api/agent/authenticate'].post.requestBody!.content['application/json'].schema;
    expect(Object.keys(authenticate.properties!)).toEqual([
      'request_id',
      'agent_id',
      'agent_secret',
      'agent_assertion',
      'model',
      'expected_redirect_origin',
    ]);
    const userinfo = doc.paths['/userinfo'].get.responses['200'].content!['application/json'].schema;
    expect(Object.keys(userinfo.properties!)).toEqual(['sub', 'email']);
  });

  it('serves Swagger UI at /docs, with inline styles allowed there and nowhere else', async () => {
    const docs = await server.app.inject({ url: '/docs' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toMatch(/^text\/html/);
    expect(docs.body).toContain('swagger-ui-bundle.js');
    const csp = String(docs.headers['content-security-policy']);
    expect(csp).toContain("style-src 'self' 'unsafe-inline'");
    expect(csp).toMatch(/script-src 'self' 'nonce-[^']+';/);
    expect(csp).toContain("frame-ancestors 'none'");
    const page = await server.app.inject({ url: '/authorize' });
    expect(String(page.headers['content-security-policy'])).toMatch(/style-src 'self' 'nonce-[^']+';/);
  });
});

describeInChromium('Swagger UI in a browser')(`Swagger UI in a browser (${storeName})`, () => {
  let server: ListeningServer;
  beforeAll(async () => {
    server = await startListeningServer();
  });
  afterAll(() => server.close());

  it('renders every operation with no CSP violation', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(message.text());
      });
      page.on('pageerror', (error) => problems.push(error.message));
      await page.goto(`${server.issuer}/docs`);
      await page.waitForSelector('.opblock-summary-path');
      const paths = await page.locator('.opblock-summary-path').allTextContents();
      expect(new Set(paths)).toEqual(new Set(ENDPOINTS.map(([, path]) => path)));
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
