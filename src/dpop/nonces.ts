import { createHmac } from 'node:crypto';
import { safeEqual } from '../crypto/secrets.js';

/** How long one nonce is handed out; a nonce is accepted for this long again after the next one replaces it. */
export const NONCE_PERIOD_SECONDS = 300;

/**
 * Server nonces (RFC 9449 §8, §9) with no state to share: the nonce of a period is an HMAC of the
 * period's number under a secret every instance reads from the store, so any instance checks a
 * nonce another handed out. The value changes every period, and the one before stays good, so a
 * nonce lives 5 to 10 minutes.
 */
export class DpopNonces {
  private cached = { period: Number.NaN, nonce: '' };

  constructor(private readonly secret: string) {}

  private of(period: number): string {
    return createHmac('sha256', this.secret).update(`dpop-nonce:${period}`).digest('base64url').slice(0, 32);
  }

  /** The nonce to hand out at `now` (seconds since the epoch). */
  current(now: number): string {
    const period = Math.floor(now / NONCE_PERIOD_SECONDS);
    if (this.cached.period !== period) this.cached = { period, nonce: this.of(period) };
    return this.cached.nonce;
  }

  /** Whether `nonce` is this period's or the last one's. */
  accepts(nonce: string, now: number): boolean {
    return safeEqual(nonce, this.current(now)) || safeEqual(nonce, this.of(Math.floor(now / NONCE_PERIOD_SECONDS) - 1));
  }
}
