import type { Events } from './emitter.js';

/**
 * The log lines of the owner's and the operator's facts (src/events/catalogue.ts), one per fact, through the
 * logger of whoever caused it (so they carry the request's id). Their history and audit rows are the store's.
 */
export function writeActivityLogLines(events: Events): void {
  events.on('owner.signed_in', ({ method }, { log }) =>
    log.info(method === 'passkey' ? 'owner signed in with a passkey' : 'owner signed in by email link'),
  );
  events.on('owner.stepped_up', (_, { log }) => log.info('owner confirmed with a passkey'));
  events.on('owner.signed_out', ({ everywhere }, { log }) => log.info({ everywhere }, 'owner signed out'));
  events.on('owner.passkey_added', ({ passkey_id }, { log }) => log.info({ passkey_id }, 'owner registered a passkey'));
  events.on('owner.passkey_removed', ({ passkey_id }, { log }) => log.info({ passkey_id }, 'owner deleted a passkey'));
  events.on('owner.settings_changed', ({ fields }, { log }) => log.info({ fields }, 'owner changed their settings'));
  events.on('agent.created', ({ agent_id }, { log }) => log.info({ agent_id }, 'owner created an agent'));
  events.on('agent.updated', ({ agent_id, fields }, { log }) => log.info({ agent_id, fields }, 'owner changed an agent'));
  events.on('agent.secret_rotated', ({ agent_id, revoke_grants }, { log }) =>
    log.info({ agent_id, revoke_grants }, 'owner gave an agent a new secret'),
  );
  events.on('agent.deleted', ({ agent_id }, { log }) => log.info({ agent_id }, 'owner deleted an agent'));
  events.on('logout.delivered', (delivery, { log }) => log.info(delivery, 'logout token delivered'));
  events.on('logout.refused', ({ given_up, ...delivery }, { log }) =>
    log.warn(delivery, given_up ? 'logout token delivery failed; given up' : 'logout token delivery refused; will retry'),
  );
}
