// Architecture rules, checked in CI (`npm run lint`). A batch's path only walks down:
// surfaces (cli, http, metrics, library) → intake / sync / reconcile → remote client, gate, mapping → db.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
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
