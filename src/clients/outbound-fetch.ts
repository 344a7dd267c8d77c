import { lookup } from 'node:dns/promises';
import { request } from 'node:https';
import type { LookupFunction } from 'node:net';
import { BlockList, isIP } from 'node:net';

/**
 * GETs of documents that clients name (Client ID Metadata Documents, their jwks_uri): https only,
 * no redirect followed, only 200, a size bound, a time bound, and never to a special-use address
 * (RFC 6890) unless the caller allows it (an issuer on loopback, for development): the host is
 * resolved first, every address checked, and the connection pinned to the checked ones, so that a
 * DNS answer that changes meanwhile cannot send it elsewhere.
 */

// RFC 6890's registries (and the multicast and reserved ranges): nowhere a client's document lives.
const SPECIAL_USE = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  SPECIAL_USE.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  SPECIAL_USE.addSubnet(net, bits, 'ipv6');
}

/** Whether an address is special-use; an IPv4-mapped IPv6 address (::ffff:a.b.c.d) counts as the IPv4 one. */
export function isSpecialUse(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return SPECIAL_USE.check(mapped[1], 'ipv4');
  return SPECIAL_USE.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/** A document we would not fetch, or that did not come back as required: its reason is told to the caller. */
export class FetchRefused extends Error {}

export interface OutboundFetchOptions {
  /** Loopback and private addresses too: only when the issuer itself is on loopback (development, tests). */
  allowSpecialUse: boolean;
  /** Extra certificate authorities to trust (tests); the process's own (NODE_EXTRA_CA_CERTS included) otherwise. */
  ca?: string;
  maxBytes: number;
  timeoutMs: number;
}

export interface FetchedDocument {
  body: unknown;
  /** From Cache-Control max-age (or none). */
  maxAgeSeconds?: number;
}

async function checkedAddresses(url: URL, allowSpecialUse: boolean) {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await lookup(host, { all: true, verbatim: true }).catch(() => []);
  if (addresses.length === 0) throw new FetchRefused(`${url.hostname} does not resolve`);
  if (!allowSpecialUse && addresses.some(({ address }) => isSpecialUse(address))) {
    throw new FetchRefused(`${url.hostname} resolves to a special-use address (RFC 6890)`);
  }
  return addresses;
}

function maxAge(cacheControl: string | undefined): number | undefined {
  if (!cacheControl || /(^|,)\s*(no-store|no-cache)\b/i.test(cacheControl)) return undefined;
  const seconds = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/i.exec(cacheControl)?.[1];
  return seconds === undefined ? undefined : Number(seconds);
}

/** GETs a JSON document as the rules above say; throws FetchRefused with the reason otherwise. */
export async function fetchJsonDocument(url: URL, options: OutboundFetchOptions): Promise<FetchedDocument> {
  if (url.protocol !== 'https:') throw new FetchRefused('must use https');
  const addresses = await checkedAddresses(url, options.allowSpecialUse);
  const pinned: LookupFunction = (_host, lookupOptions, callback) =>
    lookupOptions.all ? callback(null, addresses) : callback(null, addresses[0].address, addresses[0].family);
  return new Promise<FetchedDocument>((settle, fail) => {
    const req = request(url, {
      method: 'GET',
      lookup: pinned,
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(options.timeoutMs),
      ...(options.ca && { ca: options.ca }),
    });
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        const redirect = res.statusCode! >= 300 && res.statusCode! < 400 ? ' (redirects are not followed)' : '';
        fail(new FetchRefused(`answered ${res.statusCode}${redirect}`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > options.maxBytes) {
          fail(new FetchRefused(`is larger than ${options.maxBytes} bytes`));
          req.destroy();
        } else chunks.push(chunk);
      });
      res.on('end', () => {
        try {
          settle({ body: JSON.parse(Buffer.concat(chunks).toString('utf8')), maxAgeSeconds: maxAge(res.headers['cache-control']) });
        } catch {
          fail(new FetchRefused('is not JSON'));
        }
      });
      res.on('error', () => fail(new FetchRefused('was cut off')));
    });
    req.on('error', (err) =>
      fail(
        new FetchRefused(
          err.name === 'AbortError' || err.name === 'TimeoutError' ? 'did not answer in time' : `could not be fetched: ${err.message}`,
        ),
      ),
    );
    req.end();
  });
}
