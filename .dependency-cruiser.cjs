// Import direction for src/ (docs/architecture.md, "Layout"): each stage folder imports only the folders
// listed for it; technology adapters are wired only by the composition root (app.ts, and src/app/ for its
// parts: the cluster's wiring). tools/ (the test-data
// generator) sits outside the worker: only the CLI entry may load it, and it may use only the worker's
// core, consume and decode folders.
/** Folder → the src/ folders it may import besides itself. */
const allowed = {
  core: [],
  config: ['core', 'iceberg'], // iceberg/partition-by.ts: one partition-by grammar for validation and the spec builder
  iceberg: ['core'],
  consume: ['core'],
  decode: ['core', 'iceberg'],
  transform: ['core'],
  route: ['core', 'config'],
  upload: ['core'],
  write: ['core', 'iceberg', 'upload'],
  commit: ['core', 'iceberg', 'upload'],
  // The commit channel (task side) and the committer loop: Kafka and catalog ports, the store to check and delete files.
  coordinate: ['core', 'config', 'iceberg', 'consume', 'commit', 'upload'],
  // The data path of a task: route, open and evolve tables, decode into partition writers; hands its files to the channel.
  sink: ['core', 'config', 'iceberg', 'consume', 'decode', 'route', 'upload', 'write', 'commit', 'coordinate'],
  maintain: ['core', 'iceberg', 'commit', 'upload'],
  runtime: ['core', 'config', 'iceberg', 'consume', 'decode', 'transform', 'route', 'upload', 'write', 'commit', 'coordinate', 'sink', 'maintain'],
  rest: ['core', 'config', 'runtime'],
};
/** src/ folders the generator tool (tools/generate/) may import: the Kafka and registry ports and adapters. */
const generateUses = ['core', 'consume', 'decode'];
/** The console tool (tools/console/, `icefloe produce|consume`) uses the same, plus the generator's Confluent framing. */
const consoleUses = generateUses;
const TECH = '(confluent|s3|local|redis|registry|rest|sql)';

module.exports = {
  forbidden: [
    ...Object.entries(allowed).map(([folder, deps]) => ({
      name: `layer-${folder}`,
      comment: `src/${folder}/ may import only: ${deps.join(', ') || 'nothing outside itself'}`,
      severity: 'error',
      from: { path: `^src/${folder}/` },
      to: { path: '^src/', pathNot: [`^src/(${[folder, ...deps].join('|')})/`] },
    })),
    {
      name: 'adapters-only-from-app',
      comment: 'a technology adapter folder is wired only by the composition root, src/app.ts and its parts in src/app/ (and tests)',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/app\\.ts$', '^src/app/', `^src/[^/]+/${TECH}/`] },
      to: { path: `^src/(consume|decode|upload|commit|coordinate|maintain)/${TECH}/` },
    },
    {
      name: 'coordinate-redis-through-ports',
      comment: 'src/coordinate/redis/ (the Redis coordination adapter) may import only core/ and the ports it implements, coordinate/cluster-port.ts',
      severity: 'error',
      from: { path: '^src/coordinate/redis/' },
      to: { path: '^src/', pathNot: ['^src/core/', '^src/coordinate/redis/', '^src/coordinate/cluster-port\\.ts$'] },
    },
    {
      name: 'cluster-port-pure',
      comment: 'src/coordinate/cluster-port.ts is types only: it imports nothing',
      severity: 'error',
      from: { path: '^src/coordinate/cluster-port\\.ts$' },
      to: {},
    },
    {
      name: 'entry-points-only-through-app',
      comment: 'main.ts and cli.ts reach the rest of src/ only through app.ts, core/ and the CLI\'s own cli/ (cli.ts also loads tools/generate/ for its generate command)',
      severity: 'error',
      from: { path: '^src/(main|cli)\\.ts$' },
      to: { path: '^src/', pathNot: ['^src/(app|main|cli)\\.ts$', '^src/core/', '^src/cli/'] },
    },
    {
      name: 'layer-cli',
      comment: 'src/cli/ (the CLI\'s options, help and console commands) may import only core/ from src/',
      severity: 'error',
      from: { path: '^src/cli/' },
      to: { path: '^src/', pathNot: ['^src/(cli|core)/'] },
    },
    {
      name: 'worker-without-tools',
      comment: 'the worker (src/ except the CLI entry) never imports tools/: the generator stays out of its import graph and its image',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/cli\\.ts$', '^src/cli/console\\.ts$'] },
      to: { path: '^tools/' },
    },
    {
      name: 'cli-console-loads-only-the-console-entry',
      comment: 'src/cli/console.ts reaches the console tool only through its composition, tools/console/index.ts',
      severity: 'error',
      from: { path: '^src/cli/console\\.ts$' },
      to: { path: '^tools/', pathNot: ['^tools/console/index\\.ts$'] },
    },
    {
      name: 'layer-tools-console',
      comment: `tools/console/ may import from src/ only: ${consoleUses.join(', ')}; from tools/ only the generator's encodings`,
      severity: 'error',
      from: { path: '^tools/console/' },
      to: { path: '^(src|tools)/', pathNot: [`^src/(${consoleUses.join('|')})/`, '^tools/console/', '^tools/generate/order-encodings\\.ts$'] },
    },
    {
      name: 'console-adapters-only-from-its-composition',
      comment: 'in tools/console/ only index.ts (its composition) builds technology adapters',
      severity: 'error',
      from: { path: '^tools/console/', pathNot: ['^tools/console/index\\.ts$'] },
      to: { path: `^src/[^/]+/${TECH}/` },
    },
    {
      name: 'cli-loads-only-the-generator-entry',
      comment: 'src/cli.ts reaches the generator only through its composition, tools/generate/index.ts',
      severity: 'error',
      from: { path: '^src/cli\\.ts$' },
      to: { path: '^tools/', pathNot: ['^tools/generate/index\\.ts$'] },
    },
    {
      name: 'layer-tools-generate',
      comment: `tools/generate/ may import from src/ only: ${generateUses.join(', ')}`,
      severity: 'error',
      from: { path: '^tools/generate/' },
      to: { path: '^src/', pathNot: [`^src/(${generateUses.join('|')})/`] },
    },
    {
      name: 'tool-adapters-only-from-its-composition',
      comment: 'in tools/generate/ only index.ts (its composition) builds technology adapters',
      severity: 'error',
      from: { path: '^tools/generate/', pathNot: ['^tools/generate/index\\.ts$'] },
      to: { path: `^src/[^/]+/${TECH}/` },
    },
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
