#!/usr/bin/env node
/**
 * The `icefloe` command: process entry, the only place that reads argv (with main.ts, process.env).
 * Commands arrive with the capabilities they run: `standalone` (the worker, connect-standalone's shape)
 * and `generate` (test data) come with the sink; today it answers `version` and `help`.
 */
import { readFileSync } from 'node:fs';

const USAGE = `usage: icefloe <command>

commands:
  version   print Icefloe's version and the Node runtime
  help      this text
`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return `icefloe ${pkg.version} (node ${process.version})`;
}

const [command] = process.argv.slice(2);
switch (command) {
  case 'version':
  case '--version':
    console.log(version());
    break;
  case undefined:
  case 'help':
  case '--help':
    process.stdout.write(USAGE);
    break;
  default:
    process.stderr.write(`icefloe: unknown command '${command}'\n\n${USAGE}`);
    process.exitCode = 2;
}
