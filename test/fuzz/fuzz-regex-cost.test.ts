import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { regexes } from 'zod';

/**
 * Every regular expression in the server and the agent SDK, and the ones of zod that our schemas
 * use (z.email), fed long runs of the characters patterns repeat, behind the prefixes that reach
 * their quantifiers and before tails that make the match fail. A pattern whose quantifiers overlap
 * backtracks: its time grows with the square of the run, seconds at this length, where a linear
 * one needs well under a millisecond. docs/security.md ("Checked") lists the patterns.
 */

const RUN = 20_000;
// Generous: a linear match over 20,000 characters takes microseconds; a quadratic one, seconds.
const MAX_MS = 50;
const CHARS = [' ', '\t', '\n', 'a', 'A', '0', '.', '-', '_', '=', '+', '/', '~', '%', '"', '\\', '{', '}', ',', ':', ';', '@', '&', '#', 'x', '<'];
const TAILS = ['', '!', ' x', 'x x', '\u0000'];
// What a pattern must see first before it repeats anything: literal starts of the patterns below.
const PREFIXES = [
  'basic ',
  'bearer ',
  'window.authRequest=',
  'window.authRequest = {',
  'request_id:',
  '"request_id": "',
  '::ffff:',
  '/console/agents/',
  '/console/users?email=',
  'a@',
  'a@a.',
  '2026-01-01T00:00',
  '&#x',
  '&',
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/** The regular expression literals of a file, found by the TypeScript parser (not by a pattern). */
function literals(file: string): { where: string; regex: RegExp }[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: { where: string; regex: RegExp }[] = [];
  const visit = (node: ts.Node) => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      const text = node.getText(source);
      const slash = text.lastIndexOf('/');
      const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      found.push({ where: `${file}:${line}`, regex: new RegExp(text.slice(1, slash), text.slice(slash + 1).replace('g', '')) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const patterns = [...['src', 'sdk/typescript/src'].flatMap(sourceFiles).flatMap(literals), { where: 'zod: z.email()', regex: regexes.email }];

function timeOf(regex: RegExp, input: string): number {
  const started = performance.now();
  regex.test(input);
  return performance.now() - started;
}

/** The prefixes worth trying on a pattern: those whose letters occur in it (and none). */
function prefixesFor(regex: RegExp): string[] {
  const plain = regex.source.replace(/\\/g, '').toLowerCase();
  return [
    '',
    ...PREFIXES.filter((prefix) =>
      plain.includes(
        prefix
          .replace(/[^a-z_]/gi, '')
          .toLowerCase()
          .slice(0, 6) || '\u0000',
      ),
    ),
  ];
}

describe('regular expressions that meet input run in linear time', () => {
  it('finds the patterns (the parser sees them all)', () => {
    expect(patterns.length).toBeGreaterThan(25);
  });

  it.each(patterns.map((p) => [p.where, p.regex] as const))('%s', (_where, regex) => {
    let slowest = { ms: 0, input: '', label: '' };
    for (const prefix of prefixesFor(regex)) {
      for (const char of CHARS) {
        for (const tail of TAILS) {
          const input = prefix + char.repeat(RUN) + tail;
          const ms = timeOf(regex, input);
          if (ms > slowest.ms)
            slowest = { ms, input, label: `${JSON.stringify(prefix)} + ${JSON.stringify(char)} x ${RUN} + ${JSON.stringify(tail)}` };
        }
      }
    }
    // A busy machine (a collection, another process) only ever adds time: the best of a few tries is the pattern's own cost.
    const best = Math.min(slowest.ms, ...[1, 2, 3].map(() => timeOf(regex, slowest.input)));
    expect(best, slowest.label).toBeLessThan(MAX_MS);
  });
});
