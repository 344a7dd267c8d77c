import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import type { Config } from '../config.js';

const LOCALHOST_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

// Addresses a logout token is never sent to: link-local (169.254.0.0/16 holds the cloud metadata
// services of AWS, GCP and Azure; fe80::/10), the other metadata services (Alibaba's, AWS's IPv6
// one), and "this host" (0.0.0.0, ::), which reaches every local listener.
const NEVER = new BlockList();
NEVER.addSubnet('169.254.0.0', 16, 'ipv4');
NEVER.addSubnet('fe80::', 10, 'ipv6');
NEVER.addAddress('100.100.100.200', 'ipv4');
NEVER.addAddress('fd00:ec2::254', 'ipv6');
NEVER.addSubnet('0.0.0.0', 8, 'ipv4');
NEVER.addAddress('::', 'ipv6');
// Private (RFC 1918), shared (RFC 6598, carrier-grade NAT) and unique-local (RFC 4193) ranges: the
// deployment's own network, reachable from the server but not from the Internet. Refused unless
// LOGOUT_ALLOW_PRIVATE_NETWORKS says the websites live there.
const PRIVATE = new BlockList();
PRIVATE.addSubnet('10.0.0.0', 8, 'ipv4');
PRIVATE.addSubnet('172.16.0.0', 12, 'ipv4');
PRIVATE.addSubnet('192.168.0.0', 16, 'ipv4');
PRIVATE.addSubnet('100.64.0.0', 10, 'ipv4');
PRIVATE.addSubnet('fc00::', 7, 'ipv6');
// Loopback: this machine, for a URI that says so (localhost, for development) and no other name.
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** An address as BlockList checks it: IPv4-mapped IPv6 (::ffff:a.b.c.d) as the IPv4 address it is. */
function normalized(address: string): [string, 'ipv4' | 'ipv6'] {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return [mapped[1], 'ipv4'];
  return [address, isIP(address) === 6 ? 'ipv6' : 'ipv4'];
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Where the admin listener is (a URI that reaches it is refused), and whether private networks may be reached. */
export type AddressRules = Pick<Config, 'adminHost' | 'adminPort' | 'logoutAllowPrivateNetworks'>;

/**
 * Why a back-channel logout URI may not be sent to, given what its host resolves to, or undefined
 * when it may. Each address is checked: one forbidden address is enough to refuse.
 */
export function addressProblem(url: URL, addresses: ResolvedAddress[], admin: AddressRules): string | undefined {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const localhost = LOCALHOST_NAMES.has(url.hostname);
  const adminHosts = new Set([admin.adminHost, admin.adminHost === 'localhost' ? '127.0.0.1' : admin.adminHost]);
  for (const { address } of addresses) {
    const [ip, type] = normalized(address);
    if (NEVER.check(ip, type)) return 'must not resolve to a link-local, metadata or unspecified address';
    if (!admin.logoutAllowPrivateNetworks && PRIVATE.check(ip, type)) {
      return 'must not resolve to a private, shared or unique-local address (LOGOUT_ALLOW_PRIVATE_NETWORKS=true allows them)';
    }
    const loopback = LOOPBACK.check(ip, type);
    if (loopback && !localhost) return 'may resolve to this machine only when its host is localhost, 127.0.0.1 or [::1] (development)';
    if (port === admin.adminPort && (loopback || adminHosts.has(ip) || ['0.0.0.0', '::'].includes(admin.adminHost))) {
      return 'must not point at the admin listener';
    }
  }
  return undefined;
}

/** Every address `url`'s host resolves to (an IP literal is its own). */
export async function resolve(url: URL): Promise<ResolvedAddress[]> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host)) return [{ address: host, family: isIP(host) }];
  return lookup(host, { all: true, verbatim: true });
}

/**
 * Why this back-channel logout URI is refused at registration, or undefined when it is accepted.
 * A host that does not resolve (yet) is accepted: every delivery checks the addresses again.
 */
export async function logoutUriProblem(uri: string, admin: AddressRules): Promise<string | undefined> {
  const url = new URL(uri);
  const addresses = await resolve(url).catch(() => []);
  return addressProblem(url, addresses, admin);
}
