// Dependency check (`npm run check`, CI): the folders of lib/ form layers that point one way
// (docs/decisions.md "Layers"). A folder may import its own files and any
// folder of a LOWER layer; folders of the same layer may import each other as long as no two
// folders import each other (no cycle between folders, checked separately).
/** Bottom → top. */
const LAYERS = [
  ['core'], // errors, clock, config, task names: imports nothing of lib/
  ['sis'], // the SIS format: envelope, XML safety, value formats, the reference-data key table
  ['db'], // connections (Postgres, MariaDB, Redis) and the statement runner (lib/db/statement.ts)
  ['sql'], // every SQL statement, one file per table group: static text, stable name, typed row
  ['access'], // who may call what over HTTP: roles, the route table, keys, the identity provider, the audit trail
  ['runtime'], // logger, metrics, crash handling, process runner, leader lock, HTTP server
  ['contract', 'domain', 'flight', 'refdata', 'requests'], // the Kafka contract, the pump↔domain contract and the domains
  ['pipeline', 'dispatch', 'lifecycle', 'shadow', 'watches'], // the pump, intake, backfill; the dispatchers; retention and purge; the state diff of two installations; the watches of the derived stores and of a restore
  ['api'], // HTTP routes
  ['app'], // composition of the processes
];
const folder = (names) => `^lib/(${names.join('|')})/`;
const above = (i) => LAYERS.slice(i + 1).flat();

module.exports = {
  forbidden: [
    ...LAYERS.slice(0, -1).map((names, i) => ({
      name: `layer-${names.join('-')}`,
      severity: 'error',
      comment: `${names.join(', ')} may not import a folder of a higher layer (${above(i).join(', ')})`,
      from: { path: folder(names) },
      to: { path: folder(above(i)) },
    })),
    {
      name: 'no-folder-cycle',
      severity: 'error',
      comment: 'two folders of lib/ import each other (directly or through others)',
      scope: 'folder',
      from: { path: '^lib/' },
      to: { path: '^lib/', circular: true },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'two modules import each other (directly or through others), types included: a newcomer cannot read either first',
      from: {},
      to: { circular: true },
    },
    {
      name: 'lib-not-entry-points',
      severity: 'error',
      comment: 'lib/ never imports the processes, scripts or tests',
      from: { path: '^lib/' },
      to: { path: '^(workers|scripts|test)/' },
    },
    {
      name: 'no-root-modules',
      severity: 'error',
      comment: 'every module of lib/ is in a layer folder (none directly in lib/)',
      from: {},
      to: { path: '^lib/[^/]+$' },
    },
    {
      name: 'kafkajs-through-its-fix',
      severity: 'error',
      comment: 'kafkajs is imported through lib/db/kafkajs.ts, which fixes its request queue (a negative timeout: TimeoutNegativeWarning, an idle loop); its types may come from kafkajs',
      from: { pathNot: '^lib/db/kafkajs[.]ts$' },
      to: { path: 'node_modules/kafkajs/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js', '.json'] },
  },
};
