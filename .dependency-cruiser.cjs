// Import direction for src/ (docs/architecture.md, "Layout"): each stage folder imports only the folders
// listed for it; technology adapters are wired only by the composition root (app.ts).
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
  coordinate: ['core', 'config', 'iceberg', 'consume', 'commit'],
  maintain: ['core', 'iceberg', 'commit', 'upload'],
  runtime: ['core', 'config', 'iceberg', 'consume', 'decode', 'transform', 'route', 'upload', 'write', 'commit', 'coordinate', 'maintain'],
  rest: ['core', 'config', 'runtime'],
  generate: ['core', 'consume', 'decode'],
};
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
      comment: 'a technology adapter folder is wired only by src/app.ts (and tests)',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/app\\.ts$', `^src/[^/]+/${TECH}/`] },
      to: { path: `^src/(consume|decode|upload|commit|coordinate|maintain)/${TECH}/` },
    },
    {
      name: 'entry-points-only-through-app',
      comment: 'main.ts and cli.ts reach the rest of src/ only through app.ts and core/',
      severity: 'error',
      from: { path: '^src/(main|cli)\\.ts$' },
      to: { path: '^src/', pathNot: ['^src/(app|main|cli)\\.ts$', '^src/core/'] },
    },
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
