// Architecture rules, checked in CI (`npm run lint`). A batch's path only walks down:
// surfaces (cli, http, metrics, library) → intake / sync / reconcile → remote client, gate, mapping → db.

const { LAYERS } = require('./scripts/layers.cjs');

/** A folder's files (db's own files leave out db/schema/, which is a layer of its own). */
const folderPath = (folder) => (folder === 'db' ? '^src/db/(?!schema/)' : `^src/${folder}/`);

/** One rule per folder: nothing above it in LAYERS may be imported from it. */
const layerRules = LAYERS.slice(0, -1).map((folder, i) => ({
  name: `layer-${folder.replace('/', '-')}`,
  comment: `src/${folder}/ imports only the folders before it in LAYERS (ARCHITECTURE.md "Code map"): a batch's path only walks down.`,
  severity: 'error',
  from: { path: folderPath(folder) },
  to: { path: LAYERS.slice(i + 1).map(folderPath) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'sandbox-imports-config-alone',
      comment: 'The stand-in remote shares no code with the product but its settings reader: it would agree with the client in its bugs.',
      severity: 'error',
      from: { path: '^src/sandbox/' },
      to: { path: '^src/', pathNot: '^src/(sandbox|config|support)/' },
    },
    {
      name: 'cli-loads-its-work-lazily',
      comment:
        'cli/X.ts parses command X and import()s what carries it out (commands/X.ts, or the module it names), so `--help` loads neither BullMQ nor drizzle. status-print.ts and sandbox-flags.ts are themselves loaded that way.',
      severity: 'error',
      from: { path: '^src/cli/', pathNot: '^src/cli/(status-print|sandbox-flags)[.]ts$' },
      to: {
        path: ['^src/(commands|runtime|sync|mapping|db|intake|read-model|reconcile|http|library|webhooks|redis|metrics|accounts|classroom|ratelimit)/', 'node_modules/(bullmq|drizzle-orm|ioredis|pg)/'],
        // Small leaves: an error class, a constant, drizzle's error class (to explain a failed query).
        pathNot: ['^src/commands/import-file-error[.]ts$', '^src/reconcile/types[.]ts$', 'node_modules/drizzle-orm/errors[.]js$'],
        dynamic: false,
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'config-through-settings',
      comment:
        "A part is handed its own settings, not the configuration: only a folder's settings.ts reads a Config (src/sync/settings.ts, src/reconcile/settings.ts, src/http/settings.ts), beside the composition roots (runtime, library, commands, cli, the sandbox's entry, the package's).",
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/(config|runtime|library|commands|cli)/', '^src/sandbox/index[.]ts$', '^src/index[.]ts$', '/settings[.]ts$'] },
      to: { path: '^src/config/config[.]ts$' },
    },
    {
      name: 'otel-sdk-only-when-tracing',
      comment:
        'Tracing off loads no OpenTelemetry SDK: only @opentelemetry/api (a no-op until an SDK registers) may be imported statically; the rest through import() in src/telemetry/start.ts.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '@opentelemetry/(?!api/)', dynamic: false, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-folder-cycles',
      comment: 'Folders of src/ must not depend on each other in a circle: each folder is one room of the data flow.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-module-cycles',
      comment: 'No module may reach itself through its imports.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'root-holds-only-the-entry',
      comment:
        'src/ itself holds only index.ts, the package entry, which nothing imports: every other module lives in a folder, so no root file and folder can import each other.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/[^/]+$' },
    },
    {
      name: 'tables-only-through-mapping',
      comment: 'src/mapping owns the tables: nothing else imports the schema (types included: import them from src/mapping).',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(mapping|db)/' },
      to: { path: '^src/db/schema/' },
    },
    {
      name: 'one-client-factory',
      comment:
        'Every classroom client is built by src/accounts/clients.ts (createRemoteClient), which decides its slot, breaker and observers: elsewhere, import only types from src/classroom/client.ts.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/accounts/clients[.]ts$' },
      to: { path: '^src/classroom/client[.]ts$', dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
