/**
 * The watermark never over-claims (issue 9 point 9; src/coordinate/watermark.ts), as a property over
 * interleavings: source partitions receive records (timestamp = append time; some partitions produced
 * transactionally, so a commit marker follows each batch; some records routed to another table), two or
 * more tasks poll them (each seeing the high watermark of its last fetch), end cycles at random moments
 * (an announcement with the table's spans, and a cycle-complete with every assigned partition, built as
 * the task channel builds them), and a committer reads a random prefix of the control topic, remembers
 * the reports it read, looks at the source partitions' ends, plans and commits. After every commit: every record routed to the table with a
 * timestamp at or below the stored `icefloe.valid-through-ts` is in the table. Each seed's interleaving
 * is reproducible; a failure names the seed and the record.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { COMMIT_ID_KEY } from '../../../src/commit/commit-retry.ts';
import { planTableCommit } from '../../../src/coordinate/commit-state.ts';
import { readControlPositions } from '../../../src/coordinate/control-positions.ts';
import type { Announcement, PartitionAssignment, SourceSpan } from '../../../src/coordinate/events.ts';
import { SourceReports, sourceKey } from '../../../src/coordinate/watermark.ts';
import { prng } from '../../helpers/prng.ts';
import { announcement, CONNECTOR, ControlLog, cycleComplete, emptyTable, file, LIVE, TABLE, withSnapshot } from './fixtures.ts';

const TOPIC = 'orders';
/** What the task allows for a record to reach its client's high watermark (task-channel.ts). */
const FETCH_SLACK_MS = 1000;

interface SourceRecord {
  readonly offset: bigint;
  /** Append time (a record's timestamp; a marker is appended with its batch's last record). */
  readonly ts: number;
  /** A record routed to the table; false for records of another table and for markers. */
  readonly here: boolean;
  readonly marker: boolean;
}

interface SourcePartition {
  readonly transactional: boolean;
  /** Every offset: data records and, for a transactional topic, the commit marker after each batch. */
  readonly log: SourceRecord[];
  high: bigint;
}

interface TaskPartition {
  /** The high watermark of the last fetch, and when that fetch saw the log (never earlier than before). */
  high: bigint | null;
  seenAt: number;
  /** The consumer's position after the last poll (past markers). */
  readTo: bigint;
  /** Offset after the last record returned by a poll. */
  returnedNext: bigint | undefined;
  next: bigint;
  maxTs: number | undefined;
  /** This cycle's records for the table: offsets and the span. */
  span: { first: bigint; last: bigint; maxTs: number } | undefined;
  offsets: bigint[];
}

interface Task {
  readonly id: number;
  readonly partitions: Map<number, TaskPartition>;
  cycle: number;
  lastPollStart: number | undefined;
}

function runScenario(seed: number): { commits: number; advanced: number } {
  const random = prng(seed);
  const pick = (n: number): number => Math.floor(random() * n);
  const SOURCES = 2 + pick(4);
  const TASKS = 2 + pick(2);
  const CONTROL_PARTITIONS = 1 + pick(2);
  let now = 1_700_000_000_000;
  const sources: SourcePartition[] = Array.from({ length: SOURCES }, () => ({ transactional: random() < 0.5, log: [], high: 0n }));
  const tasks: Task[] = Array.from({ length: TASKS }, (_, id) => ({ id, partitions: new Map(), cycle: 0, lastPollStart: undefined }));
  for (let s = 0; s < SOURCES; s++) {
    (tasks[s % TASKS] as Task).partitions.set(s, { high: null, seenAt: 0, readTo: 0n, returnedNext: undefined, next: 0n, maxTs: undefined, span: undefined, offsets: [] });
  }
  const control = new ControlLog(CONTROL_PARTITIONS);
  /** Per cycle (`task/cycleId`), the `partition/offset` of the table's records its announcement carries. */
  const keyed = new Map<string, string[]>();
  const applied = new Set<string>();
  const reports = new SourceReports();
  const readCursor = Array.from({ length: CONTROL_PARTITIONS }, () => 0n);
  let md = emptyTable();
  let commits = 0;
  let advanced = 0;
  let lastW: number | undefined;

  const append = (s: number): void => {
    const src = sources[s] as SourcePartition;
    const n = 1 + pick(3);
    for (let i = 0; i < n; i++) {
      now += 1 + pick(40);
      src.log.push({ offset: src.high, ts: now, here: random() < 0.7, marker: false });
      src.high += 1n;
    }
    if (src.transactional) {
      src.log.push({ offset: src.high, ts: now, here: false, marker: true });
      src.high += 1n;
    }
  };

  const poll = (task: Task): void => {
    now += 1 + pick(20);
    task.lastPollStart = now;
    for (const [s, tp] of task.partitions) {
      const src = sources[s] as SourcePartition;
      // The fetch saw the log as of a moment within the slack before the poll started.
      tp.seenAt = Math.max(tp.seenAt, now - pick(FETCH_SLACK_MS));
      const visible = src.log.filter((r) => r.ts <= tp.seenAt);
      const last = visible.at(-1);
      tp.high = last === undefined ? tp.high : last.offset + 1n;
      const unread = visible.filter((r) => r.offset >= tp.readTo);
      const unreadRecords = unread.filter((r) => !r.marker);
      const take = random() < 0.7 ? unreadRecords.length : pick(unreadRecords.length + 1);
      const got = unreadRecords.slice(0, take);
      for (const r of got) {
        tp.returnedNext = r.offset + 1n;
        tp.next = r.offset + 1n;
        if (tp.maxTs === undefined || r.ts > tp.maxTs) tp.maxTs = r.ts;
        if (r.here) {
          tp.span = tp.span === undefined ? { first: r.offset, last: r.offset, maxTs: r.ts } : { first: tp.span.first, last: r.offset, maxTs: Math.max(tp.span.maxTs, r.ts) };
          tp.offsets.push(r.offset);
        }
      }
      // The position moves past what was returned and, when every visible record was taken, past the markers.
      if (got.length === unreadRecords.length && tp.high !== null && tp.high > tp.readTo) tp.readTo = tp.high;
      if (tp.readTo < tp.next) tp.readTo = tp.next;
    }
  };

  const endCycle = (task: Task): void => {
    const cycleId = `t${task.id}-c${task.cycle++}`;
    const spans: SourceSpan[] = [];
    const keys: string[] = [];
    const assignments: PartitionAssignment[] = [];
    for (const [s, tp] of task.partitions) {
      if (tp.span !== undefined) {
        spans.push({ topic: TOPIC, partition: s, firstOffset: tp.span.first, lastOffset: tp.span.last, maxTimestampMs: tp.span.maxTs });
        for (const o of tp.offsets) keys.push(`${s}/${o}`);
      }
      const high = tp.high;
      const caughtUp = high !== null && (tp.next >= high || (tp.readTo >= high && (tp.returnedNext === undefined || tp.next >= tp.returnedNext)));
      assignments.push({ topic: TOPIC, partition: s, nextOffset: tp.next, ...(tp.maxTs === undefined ? {} : { maxTimestampMs: tp.maxTs }), caughtUp, ...(caughtUp && high !== null ? { endOffset: high } : {}) });
      tp.span = undefined;
      tp.offsets = [];
    }
    const at = task.lastPollStart;
    const caughtUpAtMs = at !== undefined && assignments.some((a) => a.caughtUp) ? at - FETCH_SLACK_MS : undefined;
    const anns: Announcement[] = spans.length === 0 ? [] : [announcement(task.id, cycleId, [file(`${cycleId}-f`)], spans)];
    keyed.set(`${task.id}/${cycleId}`, keys);
    control.transaction(task.id % CONTROL_PARTITIONS, anns, { ...cycleComplete(task.id, cycleId, assignments), ...(caughtUpAtMs === undefined ? {} : { caughtUpAtMs }) });
  };
  const committerRound = (full = false): void => {
    // The committer reads a random prefix of what is committed, remembering every report it reads.
    const until = new Map<number, bigint>();
    for (let p = 0; p < CONTROL_PARTITIONS; p++) {
      const end = control.next[p] ?? 0n;
      const cursor = readCursor[p] ?? 0n;
      until.set(p, full || random() < 0.6 ? end : cursor + BigInt(pick(Number(end - cursor) + 1)));
    }
    const fresh = control.read(new Map(readCursor.map((o, p) => [p, o])), until);
    for (const r of fresh) if ('event' in r && r.event.type === 'cycle-complete') reports.observe(r.event);
    for (let p = 0; p < CONTROL_PARTITIONS; p++) readCursor[p] = until.get(p) ?? readCursor[p] ?? 0n;
    const read = readControlPositions(md, CONNECTOR, LIVE);
    const from = read.kind === 'positions' ? read.positions : new Map<number, bigint>();
    const partitions = new Set(Array.from({ length: SOURCES }, (_, s) => sourceKey(TOPIC, s)));
    // The committer looks at each partition's end now (sometimes it cannot: no ends this round).
    const ends = random() < 0.8 ? new Map(sources.map((src, s) => [sourceKey(TOPIC, s), { low: 0n, high: src.high }])) : undefined;
    const plan = planTableCommit({
      connector: CONNECTOR,
      table: TABLE,
      metadata: md,
      positions: read,
      live: LIVE,
      records: control.read(from, until),
      nowMs: now,
      sources: { partitions, reports: reports.latest, ...(ends === undefined ? {} : { ends, endsAtMs: now }) },
    });
    assert.notEqual(plan.kind, 'stopped', plan.kind === 'stopped' ? `seed ${seed}: ${plan.reason.message}` : '');
    if (plan.kind !== 'commit') return;
    md = withSnapshot(md, { ...plan.summary, [COMMIT_ID_KEY]: plan.commitId });
    commits++;
    for (const a of plan.applied) for (const k of keyed.get(`${a.announcement.taskId}/${a.announcement.cycleId}`) ?? []) applied.add(k);
    const w = plan.validThroughTs;
    if (w === undefined) return;
    if (lastW === undefined || w > lastW) advanced++;
    lastW = w;
    for (let s = 0; s < SOURCES; s++) {
      for (const r of (sources[s] as SourcePartition).log) {
        if (r.here && r.ts <= w) assert.ok(applied.has(`${s}/${r.offset}`), `seed ${seed}: W=${w} over-claims: record ${s}/${r.offset} (ts ${r.ts}, ${w - r.ts} ms at or below W) is not in the table`);
      }
    }
  };

  const steps = 60 + pick(120);
  for (let i = 0; i < steps; i++) {
    const r = random();
    if (r < 0.35) append(pick(SOURCES));
    else if (r < 0.6) poll(tasks[pick(TASKS)] as Task);
    else if (r < 0.8) endCycle(tasks[pick(TASKS)] as Task);
    else committerRound();
    now += pick(30);
  }
  // Drain: every task reads everything and reports; the committer catches up. W must then be defined.
  now += 2 * FETCH_SLACK_MS;
  for (const task of tasks) {
    poll(task);
    poll(task);
    endCycle(task);
  }
  for (let i = 0; i < 2; i++) committerRound(true);
  assert.notEqual(lastW, undefined, `seed ${seed}: no watermark after the drain`);
  return { commits, advanced };
}

test('watermark property: every record at or below W is in the table, over interleavings of tasks, idle and transactional partitions', () => {
  let commits = 0;
  let advanced = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const r = runScenario(seed);
    commits += r.commits;
    advanced += r.advanced;
  }
  // Not vacuous: W is stored and moves in most runs.
  assert.ok(commits > 1500, `commits: ${commits}`);
  assert.ok(advanced > 750, `advances of W: ${advanced}`);
});
