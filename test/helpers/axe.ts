import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';

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

/**
 * No serious or critical violation at 1280 and 390 px wide, light and dark; with SCREENSHOTS set,
 * each is also saved as docs/screenshots/<name>-<desktop|mobile>-<light|dark>.png. Leaves the page
 * at 1280 px, light.
 */
export async function expectAxeCleanEverywhere(page: Page, name: string): Promise<void> {
  for (const [width, height] of [
    [1280, 800],
    [390, 844],
  ]) {
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.setViewportSize({ width, height });
      await page.emulateMedia({ colorScheme });
      expect(await seriousViolations(page), `${name} at ${width}px, ${colorScheme}`).toEqual([]);
      if (process.env.SCREENSHOTS) {
        await page.screenshot({ path: `docs/screenshots/${name}-${width > 600 ? 'desktop' : 'mobile'}-${colorScheme}.png`, fullPage: true });
      }
    }
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.emulateMedia({ colorScheme: 'light' });
}
