import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyView from '@fastify/view';
import { Eta } from 'eta';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import helmet, { type HelmetOptions } from 'helmet';
import type { Config } from '../config.js';

const viewsDir = fileURLToPath(new URL('../../views', import.meta.url));

const common: HelmetOptions = {
  frameguard: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
  crossOriginResourcePolicy: { policy: 'same-origin' },
};

/** The headers a helmet middleware sets, recorded once: they are the same for every response it would serve. */
function headersOf(middleware: ReturnType<typeof helmet>): Record<string, string> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader: (name: string, value: string) => void (headers[name.toLowerCase()] = value),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
  };
  middleware({} as IncomingMessage, recorder as unknown as ServerResponse, () => {});
  return headers;
}

/**
 * The headers a set of helmet's middlewares would set, computed once: none of them varies per response.
 * HSTS only for an https issuer (RFC 6797 §7.2: never over plain HTTP, where browsers ignore it anyway).
 */
const staticHeaders = (options: HelmetOptions, https: boolean) =>
  headersOf(helmet({ ...common, ...options, strictTransportSecurity: https } as HelmetOptions));

// The JSON API's headers are the ones that bear on an answer a browser might load, as OWASP's REST
// Security Cheat Sheet lists them: no framing, no sniffing, no rendering (a CSP that allows nothing),
// no referrer, no cross-origin read, HTTPS only. Helmet's others concern documents (process isolation,
// DNS prefetching, legacy IE, Flash and XSS-filter switches), and each would cost every API answer a
// header line to send and parse.
const API_OPTIONS: HelmetOptions = {
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
};

/** A CSP header value as helmet writes it: `name value…` per directive, in order, joined by ";". */
const cspOf = (directives: Record<string, string[]>) =>
  Object.entries(directives)
    .map(([name, values]) => [name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`), ...values].join(' '))
    .join(';');

const LOGO_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
};

// External, so pages need no inline script for them. pages.js, shared by every page: local times,
// copy buttons; portal.js: the owners' portal's forms, which call its JSON API.
const scripts = Object.fromEntries(
  ['pages.js', 'portal.js'].map((name) => [name, readFileSync(fileURLToPath(new URL(`../../views/assets/${name}`, import.meta.url)), 'utf8')]),
);

/** What the layouts show of the operator's branding (BRAND_*, docs/operations.md). */
export interface Brand {
  name: string;
  /** Where the logo is loaded from: BRAND_LOGO_URL, or this listener's copy of BRAND_LOGO_FILE. */
  logoSrc?: string;
  accent: string;
  /** Black or white, whichever reads better on the accent colour (WCAG relative luminance). */
  accentText: string;
}

function textOn(hex: string): string {
  const digits = hex.length === 4 ? [...hex.slice(1)].map((d) => d + d).join('') : hex.slice(1);
  const [r, g, b] = [0, 2, 4].map((i) => {
    const c = parseInt(digits.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  const luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  // The contrast with white (1.05 / (L + .05)) beats the contrast with black ((L + .05) / .05) below L ≈ .18.
  return luminance > 0.179 ? '#000000' : '#ffffff';
}

function brandOf(config: Config['brand'], prefix: string): Brand {
  const logoSrc = config.logoUrl ?? (config.logoFile ? `${prefix}/assets/logo` : undefined);
  return { name: config.name, logoSrc, accent: config.accentColor, accentText: textOn(config.accentColor) };
}

export interface HtmlPagesOptions {
  /** The console's forms post only to itself; the sign-in pages cannot say so (see below). */
  formActionSelf?: boolean;
}

/** Pages (routes with `config.html`, and /docs) need per-response nonces; the JSON API does not. */
const isPageRoute = (route: RouteOptions) => Boolean(route.config?.html) || route.url.startsWith('/docs');

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A JSON route: its security headers are the static set, not the pages' (set by html-pages). */
    apiHeaders?: boolean;
  }
  interface FastifyReply {
    /** This response's CSP nonces, for the page's script and style tags (pages only, else null). */
    cspNonce: { script: string; style: string } | null;
  }
}

/**
 * Security headers for every response and eta templates for the browser pages. Scripts and
 * styles run only with the per-response nonce; nothing may frame us; no referrer leaks the query.
 */
export default fp(async function htmlPages(app: FastifyInstance, options: HtmlPagesOptions) {
  const { brand: brandConfig, issuer } = app.services.config;
  const https = issuer.startsWith('https:');
  const apiHeaders = staticHeaders(API_OPTIONS, https);
  const brand = brandOf(brandConfig, app.prefix);
  const pageDirectives: Record<string, string[]> = {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    imgSrc: ["'self'", 'data:', ...(brandConfig.logoUrl ? [new URL(brandConfig.logoUrl).origin] : [])],
    connectSrc: ["'self'"],
    baseUri: ["'none'"],
    frameAncestors: ["'none'"],
    // No form-action on the sign-in pages: Chrome applies it to the redirect that follows Approve,
    // which goes to the website.
    ...(options.formActionSelf ? { formAction: ["'self'"] } : {}),
  };
  app.addHook('onRoute', (route) => {
    if (isPageRoute(route)) {
      route.onSend = [...[route.onSend ?? []].flat(), neverCachePages];
      return;
    }
    route.config = Object.assign(route.config ?? {}, { apiHeaders: true });
    // First, so that an early answer (a 429 from a route's rate limit) has the headers too.
    route.onRequest = [
      (_request, reply, done) => {
        reply.headers(apiHeaders);
        done();
      },
      ...[route.onRequest ?? []].flat(),
    ];
  });
  app.decorateReply('cspNonce', null);
  // Pages, and answers to paths no route matches: the pages' headers, and two fresh nonces in the CSP of
  // each response. A hook of this context rather than of the routes, so that its own early answers (the
  // console's redirect to sign in) have the headers too. Only the CSP is written per response.
  const pageHeaders = staticHeaders({ contentSecurityPolicy: false }, https);
  // The policy around the two nonces, written once: `…;script-src 'self'` + nonce + `;style-src 'self'` + nonce + `;…`.
  const { defaultSrc, scriptSrc, styleSrc, ...rest } = pageDirectives;
  const [beforeScript, beforeStyle, after] = [cspOf({ defaultSrc, scriptSrc }), cspOf({ styleSrc }), cspOf(rest)];
  app.addHook('onRequest', (request, reply, done) => {
    if (request.routeOptions.config.apiHeaders) return done();
    const nonce = { script: randomBytes(16).toString('hex'), style: randomBytes(16).toString('hex') };
    reply.cspNonce = nonce;
    const csp = `${beforeScript} 'nonce-${nonce.script}';${beforeStyle} 'nonce-${nonce.style}';${after}`;
    reply.headers(pageHeaders).header('content-security-policy', csp);
    done();
  });
  // No template reads reply.locals; declared here so that @fastify/view does not add a hook filling
  // them on every request, the API's included.
  app.decorateReply('locals', null);
  await app.register(fastifyView, {
    engine: { eta: new Eta({ views: viewsDir, cache: true }) },
    // Templates are read and compiled once (by default, only with NODE_ENV=production: `npm start` on a bare
    // machine read and parsed the page's template on every request, 7% of a sign-in's CPU). `npm run dev`
    // (NODE_ENV=development) reads them afresh, so that an edited template shows at the next request.
    production: process.env.NODE_ENV !== 'development',
    root: viewsDir,
    defaultContext: { brand },
  });
  for (const [name, script] of Object.entries(scripts)) {
    app.get(`/assets/${name}`, { schema: { hide: true } }, async (_request, reply) =>
      reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=300').send(script),
    );
  }
  if (brandConfig.logoFile) {
    const logo = readFileSync(brandConfig.logoFile);
    const type = LOGO_TYPES[extname(brandConfig.logoFile).toLowerCase()];
    app.get('/assets/logo', { schema: { hide: true } }, async (_request, reply) =>
      reply.type(type).header('cache-control', 'public, max-age=300').send(logo),
    );
  }
});

/** Pages carry request ids and one-time state: never cache them anywhere. A hook of the page routes only. */
function neverCachePages(_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) {
  if (String(reply.getHeader('content-type') ?? '').startsWith('text/html')) reply.header('cache-control', 'no-store');
  done(null, payload);
}
