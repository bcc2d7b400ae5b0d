/**
 * Counts a skip once per Kafka coordinates. A task reads records again after an abandoned cycle (a
 * failed transaction, a replaced table, a revocation whose commit failed): the same record is skipped
 * again, and without this ledger counted and logged again on every retry. Per (what was skipped, the
 * table it concerns if any, topic, partition) the ledger keeps the highest offset already counted;
 * records of a partition are handled in offset order and a rewind only goes back, so an offset at or
 * below it is a record counted before.
 *
 * What a count means: records skipped at least once by this task process. A record skipped, re-read and
 * then written after all (its table was created meanwhile) stays counted. A record that moves to another
 * task after an abandoned cycle may be counted by both; each task's count is exact for itself.
 *
 * Owns: that bookkeeping (one bigint per kind, table and partition: bounded by the assignment). Must not:
 * decide what is skipped (the writer does).
 */
import type { RawRecord } from '../consume/port.ts';

export type SkipKind = 'tombstone' | 'error' | 'unrouted' | 'table-copy-skipped' | 'table-copy-failed' | 'dead-letter';

export class SkipLedger {
  private readonly highest = new Map<string, bigint>();

  /** True the first time a skip of this kind (for this table) is seen at the record's coordinates. */
  first(kind: SkipKind, r: RawRecord, table = ''): boolean {
    const key = `${kind}\u0000${table}\u0000${r.topic}\u0000${r.partition}`;
    const counted = this.highest.get(key);
    if (counted !== undefined && r.offset <= counted) return false;
    this.highest.set(key, r.offset);
    return true;
  }
}
