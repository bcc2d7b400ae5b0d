/**
 * Which announced data files are missing from the object store: the committer checks every file it is about
 * to commit (a missing one stops the table rather than being skipped, docs/architecture.md "Files and
 * cleanup"). Files seen to exist are remembered, so a table waiting round after round does not ask the store
 * about the same files again; the memory is a cache, cleared when it grows large, never a record.
 */
import type { ControlRecordRead } from '../coordinate/commit-state.ts';
import { tableRefString } from '../coordinate/events.ts';
import type { TableRef } from '../coordinate/events.ts';
import type { ObjectStore } from '../upload/port.ts';

const CONCURRENCY = 16;
const CACHE_LIMIT = 100_000;

export class AnnouncedFiles {
  private readonly existing = new Set<string>();
  private readonly store: ObjectStore;
  private readonly connector: string;

  constructor(store: ObjectStore, connector: string) {
    this.store = store;
    this.connector = connector;
  }

  /** The connector's announced files for `ref` at or past `positions` (per control partition) that the store does not have. */
  async missing(records: readonly ControlRecordRead[], ref: TableRef, positions: ReadonlyMap<number, bigint>): Promise<Set<string>> {
    const name = tableRefString(ref);
    const paths: string[] = [];
    for (const r of records) {
      if (!('event' in r) || r.event.type !== 'announcement' || r.event.connector !== this.connector) continue;
      if (r.offset < (positions.get(r.partition) ?? 0n) || tableRefString(r.event.table) !== name) continue;
      for (const f of r.event.files) if (!this.existing.has(f.filePath)) paths.push(f.filePath);
    }
    const missing = new Set<string>();
    for (let i = 0; i < paths.length; i += CONCURRENCY) {
      await Promise.all(
        paths.slice(i, i + CONCURRENCY).map(async (p) => {
          if (await this.store.exists(p)) this.existing.add(p);
          else missing.add(p);
        }),
      );
    }
    if (this.existing.size > CACHE_LIMIT) this.existing.clear();
    return missing;
  }
}
