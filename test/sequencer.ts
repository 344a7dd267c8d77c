import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The projects in the order their files start (vitest.config.ts). */
const PROJECTS = ['slow', 'pglite', 'postgres'];

/**
 * Vitest's order (longest first by the last run's times, or larger files first without them), but the slow
 * project first rather than last by name: its one file runs for minutes, and started last it would run alone.
 * Each project's files stay together, so a worker is rarely replaced by another project's.
 */
export default class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => PROJECTS.indexOf(spec.project.name);
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
