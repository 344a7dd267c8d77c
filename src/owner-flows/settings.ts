import type { RegistrationResponseJSON } from '@simplewebauthn/server';
import { InvalidRequest, NotFound } from '../errors.js';
import type { EventContext, Events } from '../events/emitter.js';
import { type PasskeyDeps, refusedAs, register } from '../passkeys/webauthn.js';
import type { Store } from '../store/index.js';
import type { OwnerSettings, OwnerSettingsPatch } from '../store/owners.js';

/**
 * The owner's own settings and passkeys, as the portal changes them (docs/protocol.md, "Owners" and
 * "Passkeys"). Whether a change needs a fresh session is the portal's guard (src/owners/protection.ts
 * says what weakens protection); each change here is written, then recorded in the owner's history.
 */

export interface OwnerSettingsDeps extends PasskeyDeps {
  store: Pick<Store, 'owners' | 'passkeys' | 'auditLog'>;
  events: Events;
}

// The owner's row goes with the session (ON DELETE CASCADE), so it is there while the session is.
async function withPasskeys({ store }: Pick<OwnerSettingsDeps, 'store'>, userId: string, settings: OwnerSettings | undefined) {
  if (!settings) throw new NotFound('no such owner');
  return { ...settings, passkeys: await store.passkeys.list(userId) };
}

/** The owner as the portal shows them: email, whether it is verified, settings, passkeys. */
export const ownerView = async (deps: Pick<OwnerSettingsDeps, 'store'>, userId: string) =>
  withPasskeys(deps, userId, await deps.store.owners.settings(userId));

/** Changes the owner's settings (approval policy, mail about new websites); returns the owner's view. */
export async function changeSettings(deps: OwnerSettingsDeps, userId: string, patch: OwnerSettingsPatch, context: EventContext) {
  const settings = await deps.store.owners.updateSettings(userId, patch);
  await deps.store.auditLog.recordAction({ actor: 'owner', event: 'owner_settings_changed', userId, detail: { ...patch } });
  deps.events.emit('owner.settings_changed', { user_id: userId, fields: Object.keys(patch) }, context);
  return withPasskeys(deps, userId, settings);
}

const recordPasskey = (deps: OwnerSettingsDeps, userId: string, event: 'passkey_added' | 'passkey_renamed' | 'passkey_removed', detail: object) =>
  deps.store.auditLog.recordAction({ actor: 'owner', event, userId, detail: { ...detail } });

/** Keeps a passkey from the authenticator's answer to the latest registration options (InvalidRequest when it is refused). */
export async function addPasskey(deps: OwnerSettingsDeps, userId: string, credential: RegistrationResponseJSON, name: string, context: EventContext) {
  const passkey = await refusedAs(register(deps, userId, credential, name), InvalidRequest);
  await recordPasskey(deps, userId, 'passkey_added', { passkey_id: passkey.id, name: passkey.name });
  deps.events.emit('owner.passkey_added', { user_id: userId, passkey_id: passkey.id }, context);
  return passkey;
}

export async function renamePasskey(deps: OwnerSettingsDeps, userId: string, id: string, name: string) {
  const renamed = await deps.store.passkeys.rename(id, userId, name);
  if (!renamed) throw new NotFound('no such passkey');
  await recordPasskey(deps, userId, 'passkey_renamed', { passkey_id: renamed.id, name: renamed.name });
  return renamed;
}

/** Deletes a passkey: it signs in and approves no more. Returns its name. */
export async function removePasskey(deps: OwnerSettingsDeps, userId: string, id: string, context: EventContext): Promise<string> {
  const name = await deps.store.passkeys.delete(id, userId);
  if (name === undefined) throw new NotFound('no such passkey');
  await recordPasskey(deps, userId, 'passkey_removed', { passkey_id: id, name });
  deps.events.emit('owner.passkey_removed', { user_id: userId, passkey_id: id }, context);
  return name;
}
