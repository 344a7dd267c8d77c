import { z } from 'zod';

/**
 * Control characters (C0, C1) and format characters (bidi overrides and isolates, zero-width
 * characters), plus the Unicode line and paragraph separators: text that reaches logs, the CLI,
 * pages and tokens must not reorder, hide or break the lines it is shown in. The one statement of
 * the rule: display text is refused with one (below), and the CLI escapes them in what it prints.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const EVERY_UNPRINTABLE = new RegExp(UNPRINTABLE.source, 'gu');

/** Whether `text` holds nothing unprintable. */
export const isPrintable = (text: string) => !UNPRINTABLE.test(text);

/** `text` with each unprintable character (but those in `keep`) replaced by `replace(character)`. */
export function replaceUnprintable(text: string, replace: (character: string) => string, keep = ''): string {
  return text.replace(EVERY_UNPRINTABLE, (character) => (keep.includes(character) ? character : replace(character)));
}

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
