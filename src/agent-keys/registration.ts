import { createPublicKey } from 'node:crypto';
import { calculateJwkThumbprint } from 'jose';
import { z } from 'zod';
import { Conflict, InvalidRequest, NotFound } from '../errors.js';
import type { AgentAssertionAlg } from '../protocol/sign-in.js';
import { idText } from '../protocol/text.js';
import { type AgentKey, type KeyPurpose, MAX_KEYS_PER_AGENT } from '../store/agent-keys.js';
import type { AuditEvent } from '../store/audit-log.js';
import type { Store } from '../store/index.js';

/**
 * An agent's public keys, as operators (admin API, CLI, console) and owners register them: one
 * function per action, taking the agent id and the kind of key, so that every caller applies the
 * same rules and leaves the same audit row, with who acted.
 */

/** A kind of key: what it is for, the curves it may be on, and its audit events. */
export interface KeyKind {
  purpose: KeyPurpose;
  /** The last segment of its routes (`/admin/agents/:id/{path}`, `/account/api/agents/:id/{path}`). */
  path: string;
  /** What it is, for the API's description. */
  what: string;
  curves: readonly string[];
  /** Whether the JWK may name its own kid; otherwise the kid is always the RFC 7638 thumbprint. */
  namedKid: boolean;
  added: AuditEvent;
  deleted: AuditEvent;
}

/** Keys that sign agent assertions (docs/protocol.md, "Agent assertions"). */
export const ASSERTION_KEYS: KeyKind = {
  purpose: 'assertion',
  path: 'keys',
  what: 'public key (Ed25519 or P-256 JWK) the agent signs its assertions with',
  curves: ['Ed25519', 'P-256'],
  namedKid: true,
  added: 'agent_key_added',
  deleted: 'agent_key_deleted',
};

/**
 * Keys that sign the agent's HTTP requests (docs/protocol.md, "Signed agent requests"): Ed25519
 * only, and named by their thumbprint, the keyid websites find them by.
 */
export const REQUEST_SIGNING_KEYS: KeyKind = {
  purpose: 'request-signing',
  path: 'signing-keys',
  what: 'request-signing key (public Ed25519 JWK) the agent signs its HTTP requests with',
  curves: ['Ed25519'],
  namedKid: false,
  added: 'signing_key_added',
  deleted: 'signing_key_deleted',
};

export const KEY_KINDS = [ASSERTION_KEYS, REQUEST_SIGNING_KEYS];

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
export function publicKeyOf(
  jwk: Record<string, unknown>,
  curves: readonly string[] = ASSERTION_KEYS.curves,
): { alg: AgentAssertionAlg; jwk: Record<string, string> } {
  const secret = PRIVATE_MEMBERS.find((member) => member in jwk);
  if (secret) throw new InvalidRequest(`jwk holds a private key (member "${secret}"): register only its public half`);
  const curve = typeof jwk.crv === 'string' && curves.includes(jwk.crv) ? CURVES[jwk.crv] : undefined;
  if (!curve || jwk.kty !== curve.kty) {
    throw new InvalidRequest(`jwk must be ${curves.map((crv) => `an ${crv} (kty ${CURVES[crv].kty})`).join(' or ')} public key`);
  }
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

/** The kid a key is registered under: the thumbprint, unless the kind lets the JWK name its own. */
async function kidOf(kind: KeyKind, jwk: Record<string, unknown>, publicJwk: Record<string, string>): Promise<string> {
  const thumbprint = await calculateJwkThumbprint(publicJwk, 'sha256');
  if (jwk.kid === undefined) return thumbprint;
  const given = kidSchema.safeParse(jwk.kid);
  if (!given.success) throw new InvalidRequest(`jwk kid ${given.error.issues[0].message}`);
  if (!kind.namedKid && given.data !== thumbprint)
    throw new InvalidRequest(`jwk kid must be the key's RFC 7638 thumbprint (${thumbprint}) or absent`);
  return given.data;
}

/** Registers a public key for an agent; the answer names its kid and algorithm. */
export async function addAgentKey({ store }: AgentKeyDeps, by: KeyActor, agentId: string, jwk: Record<string, unknown>, kind = ASSERTION_KEYS) {
  const key = publicKeyOf(jwk, kind.curves);
  const kid = await kidOf(kind, jwk, key.jwk);
  const added = await store.agentKeys.add(agentId, { kid, ...key }, kind.purpose);
  if (added === undefined) throw new NotFound(`no agent with id ${agentId}`);
  if (added === 'duplicate')
    throw new Conflict('key_exists', `the agent already has a key with kid ${kid}, or another agent does (a key serves one agent and one purpose)`);
  if (added === 'full') throw new InvalidRequest(`an agent holds at most ${MAX_KEYS_PER_AGENT} keys of a kind: delete one first`);
  await store.auditLog.recordAction({ ...by, event: kind.added, agentId, detail: { kid: added.kid, alg: added.alg } });
  return { kid: added.kid, alg: added.alg, created_at: added.created_at };
}

/** The agent's keys of a kind; NotFound when there is no such agent. */
export async function listAgentKeys({ store }: { store: Pick<Store, 'agentKeys'> }, agentId: string, kind = ASSERTION_KEYS): Promise<AgentKey[]> {
  const keys = await store.agentKeys.list(agentId, kind.purpose);
  if (!keys) throw new NotFound(`no agent with id ${agentId}`);
  return keys;
}

/** Deletes a key: what it signs is refused from now on, on every instance. */
export async function deleteAgentKey({ store }: AgentKeyDeps, by: KeyActor, agentId: string, kid: string, kind = ASSERTION_KEYS): Promise<void> {
  if (!(await store.agentKeys.remove(agentId, kid, kind.purpose))) throw new NotFound(`the agent ${agentId} has no key with kid ${kid}`);
  await store.auditLog.recordAction({ ...by, event: kind.deleted, agentId, detail: { kid } });
}
