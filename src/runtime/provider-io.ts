/**
 * The file system and environment behind the worker's config providers (config/config-providers.ts):
 * whole files read synchronously (secrets files are small, and resolution runs when a connector is
 * validated or started, never per record), and the environment the entry point passed in.
 *
 * Must not: read `process.env` (main.ts/cli.ts are the only readers; they pass it through app.ts).
 */
import { readFileSync } from 'node:fs';
import type { ProviderIO } from '../config/config-providers.ts';

export function providerIO(env: Readonly<Record<string, string | undefined>>): ProviderIO {
  return Object.freeze({ readFile: (path: string) => readFileSync(path, 'utf8'), env });
}
