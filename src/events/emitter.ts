import type { Log } from '../logger.js';
import type { EventName, EventPayloads } from './catalogue.js';

/** Who caused an event: a subscriber logs through its logger, so its lines carry that request's id. */
export interface EventContext {
  log: Log;
}

export type Listener<N extends EventName> = (event: EventPayloads[N], context: EventContext) => void | Promise<void>;

/**
 * The one path of every fact the server records (src/events/catalogue.ts): emitted once where it
 * happens, heard by every subscriber (src/services.ts attaches them all). In process and synchronous,
 * in the order of subscription. A subscriber that fails, at once or later, is logged and does not
 * fail whoever emitted: the fact has already happened.
 */
export class Events {
  private readonly listeners = new Map<EventName, Listener<never>[]>();

  on<N extends EventName>(name: N, listener: Listener<N>): void {
    this.listeners.set(name, [...(this.listeners.get(name) ?? []), listener as Listener<never>]);
  }

  emit<N extends EventName>(name: N, event: EventPayloads[N], context: EventContext): void {
    const listeners = this.listeners.get(name) as Listener<N>[] | undefined;
    if (!listeners) return;
    for (const listener of listeners) {
      try {
        const pending = listener(event, context);
        if (pending) pending.catch((err: unknown) => failed(name, err, context));
      } catch (err) {
        failed(name, err, context);
      }
    }
  }
}

function failed(name: EventName, err: unknown, { log }: EventContext) {
  log.error({ event: name, err: { message: err instanceof Error ? err.message : String(err) } }, 'event subscriber failed');
}
