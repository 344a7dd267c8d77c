import { createHash, randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';

export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** What the flows read of an answer: the parts of fetch's Response they use. */
export interface Answer {
  url: string;
  status: number;
  headers: { get(name: string): string | null; getSetCookie(): string[] };
  text(): Promise<string>;
  json(): Promise<unknown>;
}

const keptAlive = new Agent({ keepAlive: true });

/**
 * One request over a kept-alive connection, never following a redirect (fetch's `redirect: 'manual'`). The
 * sign-in flows use it rather than fetch, which cost this process as much CPU per sign-in as the server spent
 * on it, on the same two cores: a flow's rate then said more about the load generator than the server.
 */
export function send(url: string | URL, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  const { method = 'GET', headers = {}, body } = init;
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method, headers, agent: keptAlive }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const header = (name: string) => res.headers[name.toLowerCase()];
        resolve({
          url: String(url),
          status: res.statusCode ?? 0,
          headers: {
            get: (name) => [header(name) ?? []].flat().join(', ') || null,
            getSetCookie: () => res.headers['set-cookie'] ?? [],
          },
          text: async () => text,
          json: async () => JSON.parse(text),
        });
      });
    });
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** The few cookies one browser sign-in needs; paths are ignored (each flow has its own jar). */
export class CookieJar {
  private cookies = new Map<string, string>();

  store(res: Answer) {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/** fetch (or send) that fails on an unexpected status, with the body in the message. */
export async function expectStatus<T extends Answer>(res: T, ...statuses: number[]): Promise<T> {
  if (!statuses.includes(res.status)) {
    throw new Error(`${res.url || 'request'}: expected ${statuses.join('/')}, got ${res.status}: ${(await res.text()).slice(0, 300)}`);
  }
  return res;
}
