import { z } from 'zod';

/**
 * The WebAuthn Level 3 `toJSON()` shapes the browser sends (base64url fields). Only their outline
 * is checked here; @simplewebauthn/server checks every byte, and a malformed one is refused there.
 */
const b64url = (max: number) =>
  z
    .string()
    .max(max)
    .regex(/^[A-Za-z0-9_-]*$/, 'must be base64url');

const credentialOutline = <R extends z.ZodRawShape>(response: R) =>
  z.object({
    id: b64url(1400).min(1),
    rawId: b64url(1400).min(1),
    type: z.literal('public-key'),
    response: z.object(response),
    clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
    authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
  });

export const registrationCredential = credentialOutline({
  clientDataJSON: b64url(4000).min(1),
  attestationObject: b64url(16000).min(1),
  transports: z.array(z.string().max(32)).max(10).optional(),
  authenticatorData: b64url(8000).optional(),
  publicKey: b64url(8000).optional(),
  publicKeyAlgorithm: z.number().int().optional(),
}).describe('a RegistrationResponseJSON, as PublicKeyCredential.toJSON() gives it');

export const assertionCredential = credentialOutline({
  clientDataJSON: b64url(4000).min(1),
  authenticatorData: b64url(8000).min(1),
  signature: b64url(2000).min(1),
  userHandle: b64url(200).optional(),
}).describe('an AuthenticationResponseJSON, as PublicKeyCredential.toJSON() gives it');

/** The options answers: the JSON the browser hands to PublicKeyCredential.parse*OptionsFromJSON. */
export const optionsJson = z.record(z.string(), z.unknown());
