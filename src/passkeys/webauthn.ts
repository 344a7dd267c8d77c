import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import type { Config } from '../config.js';
import { randomToken } from '../crypto/secrets.js';
import type { OAuthError } from '../errors.js';
import type { Store } from '../store/index.js';
import type { ChallengePurpose, IssuedChallenge, Passkey, StoredCredential } from '../store/passkeys.js';

/**
 * Owners' passkeys (WebAuthn Level 3, through @simplewebauthn/server): registering them, and
 * checking an assertion made with one, to sign in, to approve an agent's sign-in or to confirm that
 * it is the owner before a change that weakens their protection (a step-up). The relying
 * party is the issuer: its host is the RP id, its origin the only origin accepted. Challenges are
 * kept in the store (any instance can check them), spent by the first check, good for 5 minutes.
 * User verification is required everywhere: a passkey here stands for the person, not a device.
 */

export interface PasskeyDeps {
  config: Pick<Config, 'issuer' | 'brand'>;
  store: Pick<Store, 'passkeys'>;
}

const CHALLENGE_TTL_SECONDS = 300;
/** How long the browser gives the person, in milliseconds (the challenge outlives it). */
const CEREMONY_TIMEOUT_MS = 120_000;
/** Ed25519, P-256, RSA (COSE): what authenticators offer, strongest first. */
const ALGORITHMS = [-8, -7, -257];

const relyingParty = (config: PasskeyDeps['config']) => {
  const issuer = new URL(config.issuer);
  return { rpID: issuer.hostname, origin: issuer.origin };
};

/** Why a passkey was refused: in words for the caller, never more than the protocol's own checks tell. */
export class PasskeyRefused extends Error {}

/** Spends the challenge the browser signed over; the library calls it with the challenge from clientDataJSON. */
function spendChallenge(deps: PasskeyDeps, purpose: ChallengePurpose, accept: (issued: IssuedChallenge) => boolean) {
  return async (challenge: string) => {
    const issued = await deps.store.passkeys.takeChallenge(challenge, purpose);
    return issued !== undefined && accept(issued);
  };
}

/** 256 random bits, kept as the base64url text the browser signs over; handed to the library as bytes. */
async function newChallenge(deps: PasskeyDeps, purpose: ChallengePurpose, owner: Partial<IssuedChallenge> = {}) {
  const challenge = randomToken(32);
  await deps.store.passkeys.issueChallenge(challenge, purpose, CHALLENGE_TTL_SECONDS, owner);
  return new Uint8Array(Buffer.from(challenge, 'base64url'));
}

// Both options are returned as plain objects (the JSON the browser gets), not the library's interfaces.

/** PublicKeyCredentialCreationOptionsJSON for a new passkey of this owner (discoverable, UV required). */
export async function registrationOptions(deps: PasskeyDeps, owner: { user_id: string; email: string }) {
  const { rpID } = relyingParty(deps.config);
  const existing = await deps.store.passkeys.credentials(owner.user_id);
  const options = await generateRegistrationOptions({
    rpName: deps.config.brand.name,
    rpID,
    userName: owner.email,
    userID: new TextEncoder().encode(owner.user_id),
    challenge: await newChallenge(deps, 'registration', { user_id: owner.user_id }),
    timeout: CEREMONY_TIMEOUT_MS,
    attestationType: 'none',
    excludeCredentials: existing.map((c) => ({ id: c.credential_id, transports: c.transports as AuthenticatorTransport[] })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    supportedAlgorithmIDs: ALGORITHMS,
  });
  return { ...options };
}

/** Checks a RegistrationResponseJSON over a challenge issued to this owner, and keeps the passkey. */
export async function register(deps: PasskeyDeps, userId: string, credential: RegistrationResponseJSON, name: string): Promise<Passkey> {
  const { rpID, origin } = relyingParty(deps.config);
  let verified;
  try {
    verified = await verifyRegistrationResponse({
      response: credential,
      expectedChallenge: spendChallenge(deps, 'registration', (issued) => issued.user_id === userId),
      expectedOrigin: origin,
      expectedRPID: rpID,
      requireUserVerification: true,
      supportedAlgorithmIDs: ALGORITHMS,
    });
  } catch (error) {
    throw new PasskeyRefused(`the passkey could not be registered: ${(error as Error).message}`);
  }
  if (!verified.verified || !verified.registrationInfo) throw new PasskeyRefused('the passkey could not be registered');
  const { credential: made } = verified.registrationInfo;
  const passkey = await deps.store.passkeys.create({
    user_id: userId,
    credential_id: made.id,
    public_key: made.publicKey,
    counter: made.counter,
    transports: made.transports ?? [],
    name,
  });
  if (!passkey) throw new PasskeyRefused('this passkey is already registered');
  return passkey;
}

/** What an assertion is for: signing in, approving one sign-in, or confirming it is the owner within a session. */
export type AssertionPurpose = Exclude<ChallengePurpose, 'registration'>;

/**
 * PublicKeyCredentialRequestOptionsJSON: for signing in (no owner yet: any discoverable passkey
 * of ours), for approving one sign-in (the challenge bound to it; the owner's passkeys offered), or
 * for a step-up (the challenge bound to the owner's session).
 */
export async function assertionOptions(deps: PasskeyDeps, purpose: AssertionPurpose, owner: Partial<IssuedChallenge> = {}) {
  const { rpID } = relyingParty(deps.config);
  const allowed = owner.user_id ? await deps.store.passkeys.credentials(owner.user_id) : [];
  const options = await generateAuthenticationOptions({
    rpID,
    challenge: await newChallenge(deps, purpose, owner),
    timeout: CEREMONY_TIMEOUT_MS,
    userVerification: 'required',
    allowCredentials: allowed.map((c) => ({ id: c.credential_id, transports: c.transports as AuthenticatorTransport[] })),
  });
  return { ...options };
}

/**
 * Checks an AuthenticationResponseJSON: a passkey of ours, signed with user verification over a
 * live challenge of this purpose that `accept` takes (the owner and sign-in it was issued for), at
 * the issuer's origin, with a signature counter that moved on. Returns the passkey's owner.
 */
export async function verifyAssertion(
  deps: PasskeyDeps,
  purpose: AssertionPurpose,
  credential: AuthenticationResponseJSON,
  accept: (issued: IssuedChallenge, passkey: StoredCredential) => boolean,
): Promise<{ user_id: string }> {
  const { rpID, origin } = relyingParty(deps.config);
  const passkey = await deps.store.passkeys.byCredentialId(credential.id);
  if (!passkey) throw new PasskeyRefused('this passkey is not registered here');
  let verified;
  try {
    verified = await verifyAuthenticationResponse({
      response: credential,
      expectedChallenge: spendChallenge(deps, purpose, (issued) => accept(issued, passkey)),
      expectedOrigin: origin,
      expectedRPID: rpID,
      credential: { id: passkey.credential_id, publicKey: new Uint8Array(passkey.public_key), counter: passkey.counter },
      requireUserVerification: true,
    });
  } catch (error) {
    throw new PasskeyRefused(`the passkey assertion was not accepted: ${(error as Error).message}`);
  }
  if (!verified.verified) throw new PasskeyRefused('the passkey assertion was not accepted');
  // Checked again in the store: of two instances shown the same assertion, one accepts it.
  if (!(await deps.store.passkeys.recordUse(passkey.id, verified.authenticationInfo.newCounter))) {
    throw new PasskeyRefused('the signature counter did not move on: a replayed assertion, or a cloned authenticator');
  }
  return { user_id: passkey.user_id };
}

/**
 * A passkey check whose refusal the caller answers as `refusal`: each flow says it its own way (no
 * session, not fresh, a malformed registration). The one place PasskeyRefused turns into an answer.
 */
export async function refusedAs<T>(check: Promise<T>, refusal: new (description: string) => OAuthError): Promise<T> {
  try {
    return await check;
  } catch (error) {
    if (error instanceof PasskeyRefused) throw new refusal(error.message);
    throw error;
  }
}
