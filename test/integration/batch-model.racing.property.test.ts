// The model-based property test of the doubt rule, its racing property: a run racing other paths,
// gate by gate (fc.scheduledModelRun + fc.scheduler()). What it checks, and its switches
// (MODEL_RUNS, FC_SEED, ...): test/model-based/property.ts. Its twin, the sequential property, is
// batch-model.sequential.property.test.ts; `npx vitest run test/integration/batch-model.` runs both side by side.
import { batchModelProperty } from '../model-based/property.ts';

batchModelProperty('racing');
