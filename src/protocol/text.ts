import { z } from 'zod';
import { isPrintable } from './unprintable.js';

/** A name or label shown to people: trimmed, 1 to `max` characters, nothing unprintable. */
export const displayText = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .refine(isPrintable, 'must not contain control or format characters (such as bidi overrides or zero-width characters)');

/**
 * An id as the server mints them (a prefix, "_" and base64url): a fixed alphabet, so nothing else a
 * caller sends in its place reaches the audit log.
 */
export const idText = () => z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be an id: 1 to 64 letters, digits, "_" or "-"');
