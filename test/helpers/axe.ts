import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const axeSource: string = createRequire(import.meta.url)('axe-core').source;

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/**
 * Runs axe-core (WCAG 2.x A and AA rules, best practices) in the page and returns the serious and
 * critical violations. axe is evaluated as a string, which the page's CSP does not see.
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(axeSource);
  const violations = (await page.evaluate(() =>
    (window as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe.run().then((r) => r.violations),
  )) as AxeViolation[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`);
}
