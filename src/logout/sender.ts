import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Config } from '../config.js';
import type { Events } from '../events/emitter.js';
import type { Log } from '../logger.js';
import type { SigningKeys } from '../oidc/signing-keys.js';
import type { Store } from '../store/index.js';
import type { DueDelivery } from '../store/logout-deliveries.js';
import { addressProblem, resolve } from './delivery-address.js';
import { signLogoutToken } from './logout-token.js';

/** Timings of the sender, in seconds; tests shorten them. */
export interface SenderTimings {
  /** One attempt's whole time: connect, send, answer. */
  timeout: number;
  /** A claimed delivery is left to other instances after this long (this one died meanwhile). */
  lease: number;
  /** How often due deliveries are looked for when no notification came (retries, lost notifications). */
  poll: number;
  /** The first retry's delay before jitter; each next one doubles, up to `maxDelay`. */
  firstDelay: number;
  maxDelay: number;
  /** After this long since the revocation a refused delivery is given up: failed. */
  giveUpAfter: number;
}

export const SENDER_TIMINGS: SenderTimings = { timeout: 5, lease: 15, poll: 2, firstDelay: 10, maxDelay: 600, giveUpAfter: 3600 };

// What is read of a reply's body before the connection is closed: the status is the answer, and a
// website that streams an endless body must not be drained (docs/protocol.md, back-channel logout).
export const MAX_REPLY_BYTES = 4096;

// Deliveries in flight at once per instance, and of one website: a website that does not answer
// holds two slots at most, never the queue (docs/protocol.md, back-channel logout).
const MAX_IN_FLIGHT = 16;
export const MAX_IN_FLIGHT_PER_WEBSITE = 2;

export interface SenderDeps {
  config: Pick<Config, 'issuer' | 'adminHost' | 'adminPort' | 'logoutAllowPrivateNetworks'>;
  store: Pick<Store, 'logoutDeliveries'>;
  signingKeys: SigningKeys;
  events: Events;
  log: Log;
}

/**
 * Exponential backoff with jitter: the n-th retry waits between half and all of firstDelay·2^(n-1)
 * (capped), so that the deliveries of one kill switch do not all come back at the same instant.
 */
export function retryDelay(attempts: number, timings: SenderTimings): number {
  const full = Math.min(timings.firstDelay * 2 ** (attempts - 1), timings.maxDelay);
  return full / 2 + Math.random() * (full / 2);
}

/** Why an attempt failed, and whether the website gave no answer in time (it is then backed off as a whole). */
interface Refusal {
  reason: string;
  timedOut: boolean;
}
const refusal = (reason: string, timedOut = false): Refusal => ({ reason, timedOut });

/**
 * POSTs the logout token (Back-Channel Logout §2.5) to the addresses checked here and nowhere
 * else (the connection is pinned to them, so a DNS answer that changes meanwhile cannot redirect
 * it); a redirect is an answer like any other non-2xx, never followed. Resolves with undefined on
 * 2xx, with the refusal otherwise.
 */
async function post(uri: string, token: string, deps: SenderDeps, timeoutSeconds: number): Promise<Refusal | undefined> {
  const url = new URL(uri);
  const addresses = await resolve(url).catch(() => []);
  if (addresses.length === 0) return refusal(`${url.hostname} does not resolve`);
  const problem = addressProblem(url, addresses, deps.config);
  if (problem) return refusal(`refused: the URI ${problem}`);
  const pinned: LookupFunction = (_host, options, callback) =>
    options.all ? callback(null, addresses) : callback(null, addresses[0].address, addresses[0].family);
  const body = new URLSearchParams({ logout_token: token }).toString();
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((settle) => {
    const req = send(url, {
      method: 'POST',
      lookup: pinned,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) },
      signal: AbortSignal.timeout(timeoutSeconds * 1000),
    });
    req.on('response', (res) => {
      let read = 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_REPLY_BYTES) req.destroy();
      });
      res.on('error', () => {});
      const status = res.statusCode ?? 0;
      settle(
        status >= 200 && status < 300
          ? undefined
          : refusal(`answered ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`),
      );
    });
    req.on('error', (err) =>
      settle(err.name === 'AbortError' ? refusal(`no answer within ${timeoutSeconds} s`, true) : refusal(`could not connect: ${err.message}`)),
    );
    req.end(body);
  });
}

export interface LogoutSender {
  /** Looks for due deliveries now. */
  wake(): void;
  /** Stops claiming; waits for the deliveries in flight. */
  stop(): Promise<void>;
}

/**
 * The back-channel logout sender: runs on every instance, off every request's path. It claims due
 * deliveries of the outbox (src/store/logout-deliveries.ts), signs a logout token for each and
 * POSTs it, then records the outcome: delivered, retried later with backoff, or failed for good.
 * Woken by the database's notification when a revocation writes deliveries, and by a short poll.
 */
export async function startLogoutSender(deps: SenderDeps, timings: SenderTimings = SENDER_TIMINGS): Promise<LogoutSender> {
  const { logoutDeliveries } = deps.store;
  const inFlight = new Set<Promise<void>>();
  const inFlightPerWebsite = new Map<string, number>();
  const count = (clientId: string, by: number) => {
    const n = (inFlightPerWebsite.get(clientId) ?? 0) + by;
    if (n > 0) inFlightPerWebsite.set(clientId, n);
    else inFlightPerWebsite.delete(clientId);
  };
  let claiming = false;
  let again = false;
  let stopped = false;

  async function deliver(delivery: DueDelivery): Promise<void> {
    const token = await signLogoutToken(deps.signingKeys, deps.config.issuer, delivery);
    const refused = await post(delivery.uri, token, deps, timings.timeout);
    const fields = { jti: delivery.jti, client_id: delivery.client_id, attempt: delivery.attempts };
    if (!refused) {
      await logoutDeliveries.delivered(delivery.jti);
      return deps.events.emit('logout.delivered', fields, { log: deps.log });
    }
    const status = await logoutDeliveries.refused({
      jti: delivery.jti,
      error: refused.reason,
      delaySeconds: retryDelay(delivery.attempts, timings),
      giveUpAfterSeconds: timings.giveUpAfter,
      timedOut: refused.timedOut,
      websiteDelay: { first: retryDelay(1, timings), max: timings.maxDelay },
    });
    deps.events.emit('logout.refused', { ...fields, refusal: refused.reason, given_up: status === 'failed' }, { log: deps.log });
  }

  async function claim(): Promise<void> {
    if (claiming) return void (again = true);
    claiming = true;
    try {
      do {
        again = false;
        if (stopped || inFlight.size >= MAX_IN_FLIGHT) break;
        const due = await logoutDeliveries.claimDue({
          limit: MAX_IN_FLIGHT - inFlight.size,
          leaseSeconds: timings.lease,
          perWebsite: MAX_IN_FLIGHT_PER_WEBSITE,
          inFlight: inFlightPerWebsite,
        });
        for (const delivery of due) {
          count(delivery.client_id, 1);
          const running = deliver(delivery)
            .catch((err: unknown) => deps.log.error({ err, jti: delivery.jti }, 'logout token delivery broke off; the lease will run out'))
            .finally(() => {
              inFlight.delete(running);
              count(delivery.client_id, -1);
              void claim();
            });
          inFlight.add(running);
        }
        if (due.length > 0) again = true;
      } while (again);
    } catch (err) {
      // The store is down: the poll tries again.
      deps.log.warn({ err }, 'could not read the logout outbox');
    } finally {
      claiming = false;
    }
  }

  const wake = () => void claim();
  const unlisten = await logoutDeliveries.onWritten(wake);
  const poll = setInterval(wake, timings.poll * 1000);
  poll.unref();
  wake();

  return {
    wake,
    async stop() {
      stopped = true;
      clearInterval(poll);
      await unlisten();
      while (claiming || inFlight.size > 0) await Promise.allSettled([...inFlight, new Promise((r) => setTimeout(r, 10))]);
    },
  };
}
