/** The one query interface the store is written against; pg.Pool and PGlite both sit behind it. */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: T[]; rowCount: number }>;
  /** Runs a multi-statement SQL script without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface ListenOptions {
  /**
   * Hears whether delivery is assured: false when the listening connection is lost (what is
   * notified until it is back is missed), true once it listens again.
   */
  onStatus?: (listening: boolean) => void;
  /**
   * A notification that a statement of this process causes reaches the handler before that
   * statement returns, so that this process never acts on what the statement just changed.
   */
  ownWritesFirst?: boolean;
}

export interface Db extends Queryable {
  /**
   * Runs `fn` in one transaction: all of it commits, or none of it does. `unbounded`: without
   * DATABASE_TIMEOUT_MS (migrations, which may rightly take long).
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: { unbounded?: boolean }): Promise<T>;
  /**
   * Calls `onPayload` for every NOTIFY on `channel`, from any connection or instance; returns the
   * function that stops listening. Delivery is best effort: callers must tolerate a lost message,
   * or hear `options.onStatus` say when messages may have been lost.
   */
  listen(channel: string, onPayload: (payload: string) => void, options?: ListenOptions): Promise<() => Promise<void>>;
  close(): Promise<void>;
  readonly kind: 'postgres' | 'pglite';
}
