// The order files start in. vitest's own order runs projects one after another (integration, then
// system, then unit) and, on a machine without its results cache (every CI run, a fresh clone),
// larger files first: the model-based property files, among the suite's longest, are small files of
// the `system` project, and the unit project's model search (30 s of one core) comes last, so they
// started late and the suite waited on them alone. Starting the longest first keeps every worker busy
// to the end. The list is the order of one measured run (docs/testing.md "Measured").
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The files known to run longest in the full suite (docs/testing.md "The ten slowest files"), longest first. */
export const LONGEST_FILES = [
  'test/integration/accounts.test.ts',
  'test/integration/key-refused.test.ts',
  'test/integration/batch-model.racing.property.test.ts',
  'test/integration/live-service.test.ts',
  'test/unit/batch-model.test.ts',
  'test/package/build.test.ts',
  'test/integration/deliveries-cli.test.ts',
  'test/integration/batch-model.sequential.property.test.ts',
  'test/integration/recovery.test.ts',
  'test/integration/cli-batches.test.ts',
  'test/integration/tracing.test.ts',
  'test/integration/settle-evidence.test.ts',
  'test/package/installed.test.ts',
  'test/integration/webhooks.test.ts',
  'test/integration/reconcile-refused.test.ts',
  'test/integration/demo.test.ts',
  'test/integration/intake.fuzz.test.ts',
];

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const known = LONGEST_FILES.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
      return known < 0 ? LONGEST_FILES.length : known;
    };
    const group = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
    // Stable: within a group, the known long files first, then vitest's own order.
    return base
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => group(a.spec) - group(b.spec) || rank(a.spec) - rank(b.spec) || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
