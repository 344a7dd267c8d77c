import { EventEmitter } from 'node:events';
import type { Db } from './types.js';

export const SIGN_IN_CHANGED_CHANNEL = 'auth_request_changed';

export interface SignInWatch {
  /**
   * Resolves at the next change of the request (or at once if one came since the last call),
   * after `timeoutMs`, or when `signal` aborts, whichever is first.
   */
  nextChange(timeoutMs: number, signal?: AbortSignal): Promise<void>;
  stop(): void;
}

/**
 * Wakes long polls when an authorization request changes state. The database announces every
 * change (a trigger NOTIFYs, migrations/002), so a change made on any instance wakes waiters on
 * all of them. A watch starts listening when it is created, before the caller reads the state,
 * so no change can fall between the read and the wait.
 */
export interface SignInChanges {
  watch(id: string): SignInWatch;
}

export async function watchSignInChanges(db: Db): Promise<SignInChanges> {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  await db.listen(SIGN_IN_CHANGED_CHANNEL, (id) => emitter.emit(id));

  return {
    watch(id) {
      let changed = false;
      let wake: (() => void) | undefined;
      const onChange = () => {
        changed = true;
        wake?.();
      };
      emitter.on(id, onChange);
      return {
        nextChange(timeoutMs, signal) {
          if (changed || signal?.aborted) {
            changed = false;
            return Promise.resolve();
          }
          return new Promise<void>((resolve) => {
            const done = () => {
              clearTimeout(timer);
              signal?.removeEventListener('abort', done);
              wake = undefined;
              changed = false;
              resolve();
            };
            const timer = setTimeout(done, timeoutMs);
            wake = done;
            signal?.addEventListener('abort', done, { once: true });
          });
        },
        stop() {
          emitter.off(id, onChange);
          wake?.();
        },
      };
    },
  };
}
