/** The one query interface the store is written against; pg.Pool and PGlite both sit behind it. */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: T[]; rowCount: number }>;
  /** Runs a multi-statement SQL script without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  /** Runs `fn` in one transaction: all of it commits, or none of it does. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Calls `onPayload` for every NOTIFY on `channel`, from any connection or instance; returns the
   * function that stops listening. Delivery is best effort: callers must tolerate a lost message.
   */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
  readonly kind: 'postgres' | 'pglite';
}
