/**
 * Gaps in what a dynamic-routing committer knows of the control topic (review commit-protocol-2 N3): per
 * control partition, records deleted (retention) before the committer read them and before the connector
 * position C vouched for them, [from, to). With dynamic routing the committer learns its tables only from
 * what it reads, so a table whose announcements were all among them is unknown and cannot stop for it. A
 * gap therefore stops the connector with a status entry of its own (STOPPED, `control-records-lost`: the
 * worker fails the tasks as for a stopped table), and C stays at its start, and R does not pass it, so a
 * restarted committer finds it again (C below the log start) until an operator acknowledges it (deleting
 * the connector position's group: C is then seeded at the log start).
 *
 * A gap with `keys` lies below R, which vouched for every table but those listed (stopped, failing or
 * parked then): only they may have lost announcements there, and each checks its own position once the
 * committer knows it again, which closes the gap. Without keys: any table.
 *
 * Owns: the gaps and what follows from them for status, C and R. Must not: read or commit anything (the
 * committer finds gaps, committer.ts, and the buffer reports the ranges its cursor jumped, control-buffer.ts).
 */
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { StopReason } from './commit-state.ts';
import { controlGroupId } from './connector-position.ts';
import type { RestThrough } from './connector-position.ts';

interface Gap {
  readonly from: bigint;
  readonly to: bigint;
  readonly keys?: readonly string[];
}

export class ControlGaps {
  private readonly gaps = new Map<number, Gap>();
  private readonly connector: ConnectorConfig;
  private readonly log: Logger;

  constructor(connector: ConnectorConfig, log: Logger) {
    this.connector = connector;
    this.log = log;
  }

  /** Records [from, to) of `partition` were deleted unread and unvouched for; `keys`: only these tables may have lost any. */
  note(partition: number, from: bigint, to: bigint, keys?: readonly string[]): void {
    const prior = this.gaps.get(partition);
    const anyTable = prior === undefined ? keys === undefined : prior.keys === undefined || keys === undefined;
    const next: Gap = {
      from: prior === undefined || from < prior.from ? from : prior.from,
      to: prior === undefined || to > prior.to ? to : prior.to,
      ...(anyTable ? {} : { keys: [...new Set([...(prior?.keys ?? []), ...(keys ?? [])])] }),
    };
    this.gaps.set(partition, next);
    if (prior?.from === next.from && prior.to === next.to) return;
    this.log.error('control records were deleted before the committer read them: with dynamic routing the tables they may have announced are unknown; the connector stops until an operator acknowledges it', {
      partition,
      from: next.from.toString(),
      logStart: next.to.toString(),
    });
  }

  /**
   * The open gaps as the status of the tables nobody knows (at most one entry). `known`: the keys of the
   * tables the committer knows; `readToEnd`: a gap only listed tables may have lost is judged once the whole
   * log was read (they may be learned yet).
   */
  status(known: ReadonlySet<string>, readToEnd: boolean): { readonly table: string; readonly state: 'STOPPED'; readonly reason: StopReason }[] {
    const open = this.open(known).filter(([, g]) => g.keys === undefined || readToEnd);
    const first = open[0];
    if (first === undefined) return [];
    const [partition, g] = first;
    const { topic, groupIdPrefix } = this.connector.control;
    const name = this.connector.name;
    const message =
      `control topic ${topic} partition ${partition}: records ${g.from} to ${g.to - 1n} were deleted (retention) before this connector's committer read them or its position vouched for them; ` +
      `with dynamic routing a table whose announcements were all among them is unknown to the committer, so they may be lost with no table to stop. ` +
      `Re-deliver what they may have carried (reset the consumer group connect-${name} to before those cycles, where the tables' icefloe.source-offsets.${name} show it), ` +
      `then acknowledge: stop the worker, delete the connector position's group (kafka-consumer-groups --delete --group ${controlGroupId(groupIdPrefix, name)}) and start it; the position is seeded at the log start (docs/sink.md)`;
    const context = { logStartOffset: g.to, partitions: Object.fromEntries(open.map(([p, x]) => [String(p), { from: x.from, to: x.to }])) };
    return [{ table: `(unknown tables of control topic ${topic})`, state: 'STOPPED', reason: { code: 'control-records-lost', message, partition, offset: g.from, context } }];
  }

  /** The control topic is another log now (recreated): its gaps are not the new log's. */
  clear(): void {
    this.gaps.clear();
  }

  /** Where C must stay while a gap is open: at its start. */
  needs(known: ReadonlySet<string>): Map<number, bigint> {
    return new Map(this.open(known).map(([p, g]) => [p, g.from]));
  }

  /** R speaks for the tables the committer knew: it does not pass an open gap's start, or it lists the unknown tables' keys. */
  restBelow(rest: RestThrough, known: ReadonlySet<string>): RestThrough {
    const open = this.open(known);
    if (open.length === 0) return rest;
    const through = new Map(rest.through);
    const except = new Set(rest.except);
    for (const [p, g] of open) {
      if (g.keys !== undefined) for (const k of g.keys) if (!known.has(k)) except.add(k);
      const o = through.get(p);
      if (g.keys === undefined && o !== undefined && g.from < o) through.set(p, g.from);
    }
    return { through, except: [...except] };
  }

  /** The gaps some unknown table may have lost announcements in, by partition (a known table checks its own position). */
  private open(known: ReadonlySet<string>): [number, Gap][] {
    return [...this.gaps].filter(([, g]) => g.keys === undefined || g.keys.some((k) => !known.has(k))).sort((a, b) => a[0] - b[0]);
  }
}
