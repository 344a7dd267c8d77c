import { LRUCache } from 'lru-cache';
import type { Db } from '../db/types.js';
import type { Metrics } from '../metrics.js';

/** The channel migrations/008 announces changes on; payloads `grant:<id>`, `agent:<id>`, `client:<id>`, `user:<id>`. */
const GRANT_CACHE_CHANNEL = 'agent_auth_grant_cache';
const MAX_HEARD = 1000;

/** What the cache must know of a grant it keeps: whose it is (for the notifications) and until when. */
export interface CachedGrant {
  client_id: string;
  agent_id: string;
  user_id: string;
  /** Milliseconds since the epoch: past it, the grant must be read again (a refresh may have extended it). */
  expires_at_ms: number;
}

/** What the cache must know of a client it keeps. */
export interface CachedClient {
  client_id: string;
}

/** What the cache must know of an agent it keeps: whose it is (for the notifications). */
export interface CachedAgent {
  agent_id: string;
  user_id: string;
}

/**
 * The grants and clients that /userinfo and /introspect read, and the client and agent records that a
 * sign-in reads, kept in memory (docs/operations.md, "Grant cache"). An entry lives until a notification
 * names it: the database announces every change to what is kept (migrations/008 and 100), from any
 * instance, or until it is `maxAgeMs` old. Nothing is served from memory while those notifications are
 * not assured: until the listening connection is up, and after it is lost (or fails its heartbeat) until
 * it is back and the cache has been emptied.
 */
export class GrantCache<
  Grant extends CachedGrant = CachedGrant,
  Client extends CachedClient = CachedClient,
  ClientRecord extends CachedClient = CachedClient,
  AgentRecord extends CachedAgent = CachedAgent,
> {
  private readonly grants: LRUCache<string, Grant>;
  private readonly clients: LRUCache<string, Client>;
  private readonly clientRecords: LRUCache<string, ClientRecord>;
  private readonly agentRecords: LRUCache<string, AgentRecord>;
  private readonly counts: Record<'hit' | 'miss' | 'bypass', { inc(value?: number): void }>;
  private listening = false;
  /**
   * A read from the store that began before an invalidation must not keep what it found. Flushes
   * move the epoch; the payloads heard while reads are in flight are remembered until none is.
   */
  private epoch = 0;
  private loading = 0;
  private readonly heard = new Set<string>();

  /**
   * `maxAgeMs` bounds how long an entry is served from memory in any case: whatever failure keeps a
   * notification from arriving unnoticed, a change is seen within it (GRANT_CACHE_MAX_AGE_SECONDS).
   */
  constructor(
    readonly size: number,
    metrics: Metrics,
    maxAgeMs: number,
  ) {
    // lru-cache wants a positive bound; a cache of size 0 never listens, so never keeps anything.
    this.grants = new LRUCache({ max: Math.max(1, size), ttl: maxAgeMs });
    this.clients = new LRUCache({ max: Math.max(1, size), ttl: maxAgeMs });
    this.clientRecords = new LRUCache({ max: Math.max(1, size), ttl: maxAgeMs });
    this.agentRecords = new LRUCache({ max: Math.max(1, size), ttl: maxAgeMs });
    const reads = metrics.grantCacheReads;
    this.counts = { hit: reads.labels('hit'), miss: reads.labels('miss'), bypass: reads.labels('bypass') };
    // Every series from the start, so that a scraper sees 0 rather than nothing.
    for (const count of Object.values(this.counts)) count.inc(0);
  }

  /** Listens for the database's announcements; a cache of size 0 stays off (every read bypasses it). */
  async listen(db: Db): Promise<void> {
    if (this.size === 0) return;
    await db.listen(GRANT_CACHE_CHANNEL, (payload) => this.invalidate(payload), {
      ownWritesFirst: true,
      onStatus: (listening) => this.setListening(listening),
    });
  }

  /**
   * Answers from memory with `cached()` when it can; otherwise `load()`s from the store and hands
   * what it found to `keep()`, with the epoch the read began in (for keepGrant and keepClient).
   */
  async read<T>(cached: () => T | undefined, load: () => Promise<T>, keep: (found: T, since: number) => void): Promise<T> {
    if (!this.listening) {
      this.counts.bypass.inc();
      return load();
    }
    const hit = cached();
    if (hit !== undefined) {
      this.counts.hit.inc();
      return hit;
    }
    this.counts.miss.inc();
    return this.fill(load, keep);
  }

  /**
   * Runs a statement whose result the cache may keep (a read, or a write that returns what it made),
   * then hands the result to `keep()` with the epoch the statement began in: a notification heard
   * meanwhile keeps it out, as it does a read's.
   */
  async fill<T>(run: () => Promise<T>, keep: (found: T, since: number) => void): Promise<T> {
    const since = this.epoch;
    this.loading++;
    try {
      const found = await run();
      keep(found, since);
      return found;
    } finally {
      if (--this.loading === 0) this.heard.clear();
    }
  }

  grant(id: string): Grant | undefined {
    const grant = this.grants.get(id);
    if (grant && grant.expires_at_ms <= Date.now()) {
      this.grants.delete(id);
      return undefined;
    }
    return grant;
  }

  client(id: string): Client | undefined {
    return this.clients.get(id);
  }

  clientRecord(id: string): ClientRecord | undefined {
    return this.clientRecords.get(id);
  }

  agentRecord(id: string): AgentRecord | undefined {
    return this.agentRecords.get(id);
  }

  /** Keeps a grant read since `since`, unless a notification about it (or a flush) came meanwhile. */
  keepGrant(id: string, grant: Grant, since: number) {
    const about = [`grant:${id}`, `agent:${grant.agent_id}`, `user:${grant.user_id}`, `client:${grant.client_id}`];
    if (this.current(since, about)) this.grants.set(id, grant);
  }

  keepClient(client: Client, since: number) {
    if (this.current(since, [`client:${client.client_id}`])) this.clients.set(client.client_id, client);
  }

  keepClientRecord(record: ClientRecord, since: number) {
    if (this.current(since, [`client:${record.client_id}`])) this.clientRecords.set(record.client_id, record);
  }

  keepAgentRecord(record: AgentRecord, since: number) {
    if (this.current(since, [`agent:${record.agent_id}`, `user:${record.user_id}`])) this.agentRecords.set(record.agent_id, record);
  }

  private current(since: number, about: string[]) {
    return this.listening && since === this.epoch && !about.some((payload) => this.heard.has(payload));
  }

  private invalidate(payload: string) {
    if (this.loading > 0) {
      // Bounded: past that many, forgetting them all is the safe way out.
      if (this.heard.size < MAX_HEARD) this.heard.add(payload);
      else this.epoch++;
    }
    const colon = payload.indexOf(':');
    const [kind, id] = [payload.slice(0, colon), payload.slice(colon + 1)];
    if (kind === 'grant') {
      this.grants.delete(id);
    } else if (kind === 'agent' || kind === 'user' || kind === 'client') {
      // Rare (an operator's change): a scan of at most `size` entries.
      const field = `${kind}_id` as const;
      for (const [grantId, grant] of this.grants.entries()) if (grant[field] === id) this.grants.delete(grantId);
      if (kind === 'client') {
        this.clients.delete(id);
        this.clientRecords.delete(id);
      } else if (kind === 'agent') {
        this.agentRecords.delete(id);
      } else {
        for (const [agentId, agent] of this.agentRecords.entries()) if (agent.user_id === id) this.agentRecords.delete(agentId);
      }
    } else {
      this.clear();
    }
  }

  private setListening(listening: boolean) {
    // Whatever was kept may have missed a notification while nobody listened: start empty.
    this.clear();
    this.listening = listening;
  }

  private clear() {
    this.epoch++;
    this.grants.clear();
    this.clients.clear();
    this.clientRecords.clear();
    this.agentRecords.clear();
  }
}
