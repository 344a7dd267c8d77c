import autocannon from 'autocannon';
import { FORM } from './http.js';

/** One measured operation: the same shape whether autocannon or a flow loop produced it. */
export interface Measurement {
  /** Requests (or, for multi-step flows, flows) per second. */
  rate: number;
  p50: number;
  p99: number;
  /** Completed requests or flows. */
  count: number;
  /** Socket errors, timeouts and unexpected statuses together: must be 0. */
  errors: number;
  /** Of those, answers 429 (rate limited). */
  rateLimited?: number;
  /** CPU time of the server process per request (or flow), in ms. */
  cpuMs?: number;
  /** CPU time of the PostgreSQL backends per request (or flow), in ms. */
  dbCpuMs?: number;
}

export interface LoadOptions {
  durationSeconds: number;
  connections: number;
}

export interface Target {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Each request's own body or headers (single-use credentials, a token of many); replaces those above. */
  next?: () => { body?: string; headers?: Record<string, string> };
  /** Sees each response body (e.g. to keep the rotated refresh token). */
  onBody?: (status: number, body: string) => void;
  /** Stop after this many requests instead of after the duration (a finite pool of codes). */
  amount?: number;
}

/** Runs autocannon against one endpoint; anything but a 2xx counts as an error. */
export async function hammer(target: Target, options: LoadOptions): Promise<Measurement> {
  const request: autocannon.Request = {
    method: target.method ?? 'GET',
    headers: target.headers,
    body: target.body,
  };
  if (target.next) {
    const next = target.next;
    request.setupRequest = (req) => ({ ...req, ...next() });
  }
  if (target.onBody) {
    const seen = target.onBody;
    request.onResponse = (status, body) => seen(status, body);
  }
  const result = await autocannon({
    url: target.url,
    connections: target.amount ? Math.min(options.connections, target.amount) : options.connections,
    ...(target.amount ? { amount: target.amount } : { duration: options.durationSeconds }),
    requests: [request],
  });
  const count = result.requests.total;
  const seconds = target.amount ? result.duration : options.durationSeconds;
  return {
    rate: count / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    count,
    errors: result.errors + result.timeouts + result.non2xx,
    rateLimited: result.statusCodeStats?.['429']?.count ?? 0,
  };
}

/** Refresh tokens rotate: each response's new token goes back into the pool for the next request. */
export function refreshChain(url: string, initial: string[], body: (token: string) => string): Target {
  const pool = [...initial];
  return {
    url,
    method: 'POST',
    headers: FORM,
    // An empty pool means a chain broke (a failed refresh); the request then fails and is counted.
    next: () => ({ body: body(pool.shift() ?? 'exhausted') }),
    onBody: (status, text) => {
      if (status === 200) pool.push((JSON.parse(text) as { refresh_token: string }).refresh_token);
    },
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * A multi-step flow (one sign-in) run back to back by `connections` workers until the time is
 * up; the rate is flows per second and the latencies are those of whole flows.
 */
export async function loop(flow: () => Promise<void>, options: LoadOptions): Promise<Measurement> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + options.durationSeconds * 1000;
  let firstError: unknown;
  async function worker() {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      try {
        await flow();
        latencies.push(performance.now() - t0);
      } catch (err) {
        errors += 1;
        firstError ??= err;
      }
    }
  }
  await Promise.all(Array.from({ length: options.connections }, worker));
  const elapsed = (performance.now() - started) / 1000;
  if (firstError) console.error(`  first flow error: ${firstError instanceof Error ? firstError.message : String(firstError)}`);
  latencies.sort((a, b) => a - b);
  return {
    rate: latencies.length / elapsed,
    p50: Math.round(percentile(latencies, 50) * 100) / 100,
    p99: Math.round(percentile(latencies, 99) * 100) / 100,
    count: latencies.length,
    errors,
  };
}

/** Runs `task` with at most `concurrency` at a time, e.g. to prepare thousands of codes. */
export async function inParallel<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  async function worker() {
    while (next < count) {
      const i = next++;
      results[i] = await task(i);
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}
