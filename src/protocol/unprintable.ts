/**
 * Control characters (C0, C1) and format characters (bidi overrides and isolates, zero-width
 * characters), plus the Unicode line and paragraph separators: text that reaches logs, the CLI,
 * pages and tokens must not reorder, hide or break the lines it is shown in. The one statement of
 * the rule: display text is refused with one (src/protocol/text.ts), and the CLI escapes them in what
 * it prints. Without zod, so that the CLI starts without loading it.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const EVERY_UNPRINTABLE = new RegExp(UNPRINTABLE.source, 'gu');

/** Whether `text` holds nothing unprintable. */
export const isPrintable = (text: string) => !UNPRINTABLE.test(text);

/** `text` with each unprintable character (but those in `keep`) replaced by `replace(character)`. */
export function replaceUnprintable(text: string, replace: (character: string) => string, keep = ''): string {
  return text.replace(EVERY_UNPRINTABLE, (character) => (keep.includes(character) ? character : replace(character)));
}
