// The layer order of src/'s folders, shared by the lint rules and the test of ARCHITECTURE.md.
/**
 * The folders of src/, bottom to top: each imports only folders before it. ARCHITECTURE.md's code
 * map states this order (test/unit/architecture-doc.test.ts compares the two);
 * .dependency-cruiser.cjs turns it into one rule per folder.
 */
const LAYERS = [
  'support',
  'telemetry',
  'db/schema',
  'db',
  'redis',
  'mapping',
  'ratelimit',
  'classroom',
  'logging',
  'webhooks',
  'access',
  'accounts',
  'config',
  'sandbox',
  'sync',
  'intake',
  'read-model',
  'reconcile',
  'runtime',
  'metrics',
  'http',
  'library',
  'commands',
  'cli',
];

module.exports = { LAYERS };
