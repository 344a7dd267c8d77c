import { InvalidTarget } from '../errors.js';
import { transportProblem } from '../protocol/transport.js';

/**
 * Resource indicators (RFC 8707 §2): an absolute URI without a fragment, over https (plain http on
 * this machine only). A trailing slash names the same resource (MCP clients send one), so the
 * canonical form, the one stored and the one tokens carry as `aud`, has none: `https://mcp.example.com`
 * for `https://mcp.example.com/` too.
 */
export function canonicalResource(value: string): { resource: string } | { problem: string } {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { problem: 'must be an absolute URI' };
  }
  if (value.includes('#')) return { problem: 'must not contain a fragment' };
  if (url.username || url.password) return { problem: 'must not carry credentials' };
  const transport = transportProblem(url);
  if (transport) return { problem: transport };
  // Trailing slashes name the same resource; trimmed by index (a pattern anchored at the end backtracks on a run of them).
  let end = url.pathname.length;
  while (end > 0 && url.pathname[end - 1] === '/') end--;
  return { resource: `${url.origin}${url.pathname.slice(0, end)}${url.search}` };
}

/**
 * The `resource` parameter of /authorize or /token (RFC 8707 §2), canonical; undefined when absent.
 * We issue tokens for one resource at a time: several values are refused, as is a malformed one.
 */
export function requestedResource(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) throw new InvalidTarget('name one resource per request');
  const canonical = canonicalResource(value);
  if ('problem' in canonical) throw new InvalidTarget(`resource ${canonical.problem}`);
  return canonical.resource;
}
