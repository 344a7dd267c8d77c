import { createPublicKey } from 'node:crypto';
import { calculateJwkThumbprint } from 'jose';
import { z } from 'zod';
import { Conflict, InvalidRequest, NotFound } from '../errors.js';
import type { AgentAssertionAlg } from '../protocol/sign-in.js';
import { idText } from '../protocol/text.js';
import { type AgentKey, MAX_KEYS_PER_AGENT } from '../store/agent-keys.js';
import type { Store } from '../store/index.js';

/**
 * An agent's public keys, as operators (admin API, CLI, console) and owners register them: one
 * function per action, taking the agent id, so that every caller applies the same rules and
 * leaves the same audit row, with who acted.
 */

/** What registering needs: the agent key store, and the audit log for additions and deletions. */
export interface AgentKeyDeps {
  store: Pick<Store, 'agentKeys' | 'auditLog'>;
}

/** Who registers or deletes a key: an operator, or the agent's owner (whose ownership the caller has checked). */
export type KeyActor = { actor: 'admin' } | { actor: 'owner'; userId: string };

export const kidSchema = idText().describe('key id: the RFC 7638 thumbprint unless the JWK named one');

/** The body of a key registration: a public JWK (checked by addAgentKey, which says what is wrong with it). */
export const newKeyBody = z.strictObject({
  jwk: z.record(z.string(), z.unknown()).describe('a public JWK: OKP with crv Ed25519, or EC with crv P-256; kid optional'),
});

/** The answer to a registration. */
export const addedKeyView = z.object({ kid: z.string(), alg: z.string(), created_at: z.date() });
/** A registered key as listed: the public JWK, and when an assertion signed by it was last accepted. */
export const keyView = addedKeyView.extend({
  jwk: z.record(z.string(), z.string()),
  last_used_at: z.date().nullable(),
});

// Members that only a private (or symmetric) JWK has (RFC 7518 §6.2.2, §6.3.2, §6.4.1; RFC 8037 §2).
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const COORDINATE = /^[A-Za-z0-9_-]{43}$/;

/** The curves accepted, the algorithm each signs with, and the public members that make up the key. */
const CURVES: Record<string, { kty: string; alg: AgentAssertionAlg; members: string[] }> = {
  Ed25519: { kty: 'OKP', alg: 'EdDSA', members: ['x'] },
  'P-256': { kty: 'EC', alg: 'ES256', members: ['x', 'y'] },
};

/** A registrable public key: its algorithm and the JWK reduced to its public members; throws InvalidRequest with the reason. */
export function publicKeyOf(jwk: Record<string, unknown>): { alg: AgentAssertionAlg; jwk: Record<string, string> } {
  const secret = PRIVATE_MEMBERS.find((member) => member in jwk);
  if (secret) throw new InvalidRequest(`jwk holds a private key (member "${secret}"): register only its public half`);
  const curve = typeof jwk.crv === 'string' ? CURVES[jwk.crv] : undefined;
  if (!curve || jwk.kty !== curve.kty) throw new InvalidRequest('jwk must be an Ed25519 (kty OKP) or P-256 (kty EC) public key');
  if (jwk.alg !== undefined && jwk.alg !== curve.alg) throw new InvalidRequest(`jwk alg must be ${curve.alg} for a ${String(jwk.crv)} key`);
  if (jwk.use !== undefined && jwk.use !== 'sig') throw new InvalidRequest('jwk use must be "sig"');
  const key: Record<string, string> = { kty: curve.kty, crv: String(jwk.crv) };
  for (const member of curve.members) {
    const value = jwk[member];
    if (typeof value !== 'string' || !COORDINATE.test(value)) throw new InvalidRequest(`jwk ${member} must be 32 bytes in base64url`);
    key[member] = value;
  }
  try {
    // Refuses a point that is not on the curve.
    createPublicKey({ key, format: 'jwk' });
  } catch {
    throw new InvalidRequest('jwk is not a valid public key');
  }
  return { alg: curve.alg, jwk: key };
}

/** Registers a public key for an agent; the answer names its kid and algorithm. */
export async function addAgentKey({ store }: AgentKeyDeps, by: KeyActor, agentId: string, jwk: Record<string, unknown>) {
  const key = publicKeyOf(jwk);
  let kid: string;
  if (jwk.kid === undefined) kid = await calculateJwkThumbprint(key.jwk, 'sha256');
  else {
    const given = kidSchema.safeParse(jwk.kid);
    if (!given.success) throw new InvalidRequest(`jwk kid ${given.error.issues[0].message}`);
    kid = given.data;
  }
  const added = await store.agentKeys.add(agentId, { kid, ...key });
  if (added === undefined) throw new NotFound(`no agent with id ${agentId}`);
  if (added === 'duplicate') throw new Conflict('key_exists', `the agent already has a key with kid ${kid}`);
  if (added === 'full') throw new InvalidRequest(`an agent holds at most ${MAX_KEYS_PER_AGENT} keys: delete one first`);
  await store.auditLog.recordAction({ ...by, event: 'agent_key_added', agentId, detail: { kid: added.kid, alg: added.alg } });
  return { kid: added.kid, alg: added.alg, created_at: added.created_at };
}

/** The agent's keys; NotFound when there is no such agent. */
export async function listAgentKeys({ store }: { store: Pick<Store, 'agentKeys'> }, agentId: string): Promise<AgentKey[]> {
  const keys = await store.agentKeys.list(agentId);
  if (!keys) throw new NotFound(`no agent with id ${agentId}`);
  return keys;
}

/** Deletes a key: assertions it signs are refused from now on, on every instance. */
export async function deleteAgentKey({ store }: AgentKeyDeps, by: KeyActor, agentId: string, kid: string): Promise<void> {
  if (!(await store.agentKeys.remove(agentId, kid))) throw new NotFound(`the agent ${agentId} has no key with kid ${kid}`);
  await store.auditLog.recordAction({ ...by, event: 'agent_key_deleted', agentId, detail: { kid } });
}
