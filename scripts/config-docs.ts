/**
 * `npm run docs:config`: writes the configuration tables of README.md and docs/operations.md from
 * the schema's documentation of each variable (src/config.ts), between the marker comments of each
 * table. `--check` writes nothing and exits 1 when a file differs from what it would write
 * (test/config-docs.test.ts runs the same comparison).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { variableDocs } from '../src/config.js';

type Variable = ReturnType<typeof variableDocs>[number];

/** One generated table: where it goes, which variables it lists, and which of their texts. */
interface Table {
  file: string;
  name: string;
  header: string;
  text: 'title' | 'description';
  lists(variable: Variable): boolean;
}

const TABLES: Table[] = [
  { file: 'README.md', name: 'variables', header: 'Meaning', text: 'title', lists: () => true },
  { file: 'docs/operations.md', name: 'variables', header: 'What it does', text: 'description', lists: (v) => v.section === undefined },
  { file: 'docs/operations.md', name: 'branding', header: 'Meaning', text: 'description', lists: (v) => v.section === 'branding' },
];

const begin = (name: string) => `<!-- config table "${name}": written by npm run docs:config from src/config.ts; edit there -->`;
const end = (name: string) => `<!-- end of config table "${name}" -->`;
const cell = (text: string) => text.replace(/\|/g, '\\|');

function render(table: Table, variables: Variable[]): string {
  const rows = variables.filter(table.lists).map((v) => `| \`${v.name}\` | ${cell(v.shownDefault)} | ${cell(v[table.text])} |`);
  return [begin(table.name), `| Variable | Default | ${table.header} |`, '| --- | --- | --- |', ...rows, end(table.name)].join('\n');
}

/** Each file's text with its tables as the schema documents them now. */
export function configDocs(root: string): Map<string, { current: string; generated: string }> {
  const variables = variableDocs();
  const files = new Map<string, { current: string; generated: string }>();
  for (const table of TABLES) {
    const path = `${root}/${table.file}`;
    const file = files.get(path) ?? { current: readFileSync(path, 'utf8'), generated: readFileSync(path, 'utf8') };
    const from = file.generated.indexOf(begin(table.name));
    const to = file.generated.indexOf(end(table.name));
    if (from < 0 || to < from) throw new Error(`${table.file} has no config table "${table.name}" between marker comments`);
    file.generated = file.generated.slice(0, from) + render(table, variables) + file.generated.slice(to + end(table.name).length);
    files.set(path, file);
  }
  return files;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  let stale = false;
  for (const [path, { current, generated }] of configDocs(fileURLToPath(new URL('..', import.meta.url)))) {
    if (current === generated) continue;
    stale = true;
    if (check) process.stderr.write(`${path} is out of date: run npm run docs:config\n`);
    else writeFileSync(path, generated);
  }
  process.exit(check && stale ? 1 : 0);
}
