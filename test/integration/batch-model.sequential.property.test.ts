// The model-based property test of the doubt rule, its sequential property: one path at a time
// (fc.commands + fc.asyncModelRun), runs killed or paused mid-way. What it checks, and its switches
// (MODEL_RUNS, FC_SEED, ...): test/model-based/property.ts. Its twin, the racing property, is
// batch-model.racing.property.test.ts; `npx vitest run test/integration/batch-model.` runs both side by side.
import { batchModelProperty } from '../model-based/property.ts';

batchModelProperty('sequential');
