import { createHash, randomBytes } from 'node:crypto';

export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** The few cookies one browser sign-in needs; paths are ignored (each flow has its own jar). */
export class CookieJar {
  private cookies = new Map<string, string>();

  store(res: Response) {
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

/** fetch that fails on an unexpected status, with the body in the message. */
export async function expectStatus(res: Response, ...statuses: number[]): Promise<Response> {
  if (!statuses.includes(res.status)) {
    throw new Error(`${res.url || 'request'}: expected ${statuses.join('/')}, got ${res.status}: ${(await res.text()).slice(0, 300)}`);
  }
  return res;
}
