/**
 * The standalone herder's connector store: one JSON file in the worker's data directory
 * (`icefloe.connectors.file`), so connectors created, reconfigured, paused or stopped through the REST API
 * survive a worker restart. Written whole on every change through a temporary file and a rename, so a
 * crash mid-write leaves the previous version, never half of one. The file holds configs as submitted:
 * `${...}` placeholders stay placeholders, and the file is created readable by its owner only (a config
 * may hold a password the user did not put behind a config provider).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError, errorMessage } from '../core/errors.ts';
import type { ConnectorStore, StoredConnector } from './herder.ts';

const VERSION = 1;
const TARGETS = new Set(['STARTED', 'PAUSED', 'STOPPED']);

export class FileConnectorStore implements ConnectorStore {
  private readonly path: string;

  constructor(path: string) {
    this.path = path;
  }

  load(): readonly StoredConnector[] {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new ConfigError(`cannot read the connector store ${this.path}: ${errorMessage(e)}`, { cause: e });
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (e) {
      throw new ConfigError(`the connector store ${this.path} is not valid JSON (${errorMessage(e)}); move it away to start without its connectors`, { cause: e });
    }
    const connectors = (doc as { connectors?: unknown }).connectors;
    if (!Array.isArray(connectors)) throw new ConfigError(`the connector store ${this.path} has no "connectors" list`);
    return connectors.map((c: unknown, i) => {
      const { name, config, target } = (c ?? {}) as Record<string, unknown>;
      const strings = typeof config === 'object' && config !== null && Object.values(config).every((v) => typeof v === 'string');
      if (typeof name !== 'string' || !strings || typeof target !== 'string' || !TARGETS.has(target)) {
        throw new ConfigError(`the connector store ${this.path}: entry ${i} is not {name, config (strings), target (STARTED|PAUSED|STOPPED)}`);
      }
      return { name, config: config as Record<string, string>, target: target as StoredConnector['target'] };
    });
  }

  save(connectors: readonly StoredConnector[]): void {
    mkdirSync(dirname(this.path), { recursive: true });
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ version: VERSION, connectors }, null, 2)}\n`, { mode: 0o600 });
    renameSync(tmp, this.path);
  }
}
