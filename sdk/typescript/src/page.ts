import { TimeoutError } from './errors.js';
import { sleep } from './sleep.js';

/**
 * The few methods of a browser page this SDK uses; Playwright's and Puppeteer's `Page` fit.
 * Typed by shape so the SDK needs no browser library.
 */
export interface PageLike {
  /** Runs an expression in the page (preferred: reads the live DOM). */
  evaluate?(expression: string): Promise<unknown>;
  /** The page's HTML (used when `evaluate` is missing). */
  content?(): Promise<string>;
  /** The page's current URL; when present, only a page of the expected origin is read. */
  url?(): string;
}

const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (match, ref: string) => {
    if (ref[0] !== '#') return entities[ref.toLowerCase()] ?? match;
    const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
    return Number.isFinite(code) ? String.fromCodePoint(code) : match;
  });
}

function metaRequestId(html: string): string | undefined {
  for (const [tag] of html.matchAll(/<meta\b[^>]*>/gi)) {
    const attributes = new Map<string, string>();
    for (const m of tag.matchAll(/(?<![\w-])([\w-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/g)) {
      attributes.set(m[1].toLowerCase(), decodeEntities(m[2] ?? m[3] ?? m[4]));
    }
    const content = attributes.get('content');
    if (attributes.get('name') === 'request-id' && content) return content;
  }
  return undefined;
}

// The page's script literal, `window.authRequest = { request_id: "req_…", … }` (its key quoted or not),
// and the id's JSON string within it.
const AUTH_REQUEST_LITERAL = /window\.authRequest\s*=\s*\{([^;]*?)\}\s*;/;
const REQUEST_ID_ENTRY = /(?:^|[\s,])(?:request_id|"request_id")\s*:\s*("(?:[^"\\]|\\.)*")/;

function scriptRequestId(html: string): string | undefined {
  const literal = AUTH_REQUEST_LITERAL.exec(html)?.[1];
  const quoted = literal && REQUEST_ID_ENTRY.exec(literal)?.[1];
  if (!quoted) return undefined;
  try {
    const id: unknown = JSON.parse(quoted);
    return typeof id === 'string' && id ? id : undefined;
  } catch {
    return undefined;
  }
}

/** The request id on an authorization page: its `request-id` meta tag, else `window.authRequest`. */
export function findRequestId(html: string): string | undefined {
  return metaRequestId(html) ?? scriptRequestId(html);
}

// A string, not a function: bundlers and TypeScript loaders rewrite functions in ways that break
// once the browser runs their serialized source.
const readInPage = `(() => {
  const fromScript = window.authRequest && window.authRequest.request_id;
  if (typeof fromScript === 'string' && fromScript) return fromScript;
  const meta = document.querySelector('meta[name="request-id"]');
  return (meta && meta.getAttribute('content')) || null;
})()`;

async function requestIdOnPage(page: PageLike): Promise<string | undefined> {
  if (page.evaluate) {
    const id = await page.evaluate(readInPage);
    return typeof id === 'string' && id ? id : undefined;
  }
  return findRequestId(await page.content!());
}

export interface ReadRequestIdOptions {
  /**
   * Origin of the authorization server. When the page reports its URL, an id is taken only from a
   * page of this origin, so a look-alike page cannot make the agent approve someone else's request.
   */
  expectedOrigin?: string;
  /** How long to wait for the authorization page to appear (default 30 s). */
  timeoutMs?: number;
  intervalMs?: number;
  signal?: AbortSignal;
}

/**
 * Waits until the browser shows the authorization page and returns its request id. Retries while the
 * page is still on its way there (another origin, no id yet, or a navigation in progress).
 */
export async function readRequestId(page: PageLike, options: ReadRequestIdOptions = {}): Promise<string> {
  const { expectedOrigin, timeoutMs = 30_000, intervalMs = 250, signal } = options;
  if (!page.evaluate && !page.content) {
    throw new TypeError('the page object needs an evaluate(expression) or a content() method');
  }
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    if (!expectedOrigin || !page.url || new URL(page.url()).origin === expectedOrigin) {
      try {
        const id = await requestIdOnPage(page);
        if (id) return id;
      } catch (err) {
        // Typically a navigation that destroyed the page's context mid-read: try again.
        lastError = err;
      }
    }
    if (Date.now() >= deadline) {
      const where = expectedOrigin ? ` of ${expectedOrigin}` : '';
      throw new TimeoutError(`no authorization page${where} with a request id appeared within ${timeoutMs} ms`, {
        cause: lastError,
      });
    }
    await sleep(intervalMs, signal);
  }
}
