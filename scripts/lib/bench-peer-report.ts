/**
 * The report of `npm run bench:peer`: one markdown table with a row per run (Icefloe, Icefloe warm, Java cold,
 * Java warm), the ratios Icefloe / Java (and Icefloe warm / Java warm, the two measured alike), and what the
 * independent reader found in each table. Printed, and written to --out by the caller.
 */
import { fmt, int, mib } from './bench-context.ts';
import type { JavaInstall } from './bench-peer-java.ts';
import type { PeerOptions, RunResult } from './bench-peer-run.ts';
import { p50, p99 } from './bench-peer-run.ts';

export interface TableCheck {
  readonly rows: number;
  readonly distinct_order_ids: number;
  readonly total_sum: string;
  readonly created_min_us: number | null;
  readonly created_max_us: number | null;
  readonly snapshots: number;
  readonly data_files: number;
  readonly schema: string;
}

export interface PeerResults {
  readonly o: PeerOptions;
  readonly bytes: number;
  readonly loadAtStart: string;
  readonly uptime: string;
  readonly install: JavaInstall | undefined;
  readonly runs: readonly RunResult[];
  readonly checks: ReadonlyMap<string, TableCheck>;
  /** Problems the checks found (empty: every table holds exactly N rows, the same ones). */
  readonly failures: readonly string[];
}

const SERVICE_ORDER = ['Kafka broker', 'S3 (moto)', 'REST catalog', 'PostgreSQL', 'registry'];

function ms(xs: readonly number[]): string {
  return xs.length === 0 ? '–' : `${fmt(p50(xs) / 1000, 2)} / ${fmt(p99(xs) / 1000, 2)} s`;
}

export function peerReport(r: PeerResults): string {
  const md: string[] = [];
  const say = (line = ''): void => {
    console.log(line);
    md.push(line);
  };
  const mb = r.bytes / 1e6;
  const n = r.o.records;
  const versions = r.install === undefined ? '' : `; Java: Kafka Connect ${r.install.kafkaVersion} (standalone), Apache Iceberg sink ${r.install.icebergVersion}, Apicurio AvroConverter ${r.install.converterVersion}, -Xmx${r.o.javaHeap}, offset.flush.interval.ms ${r.o.javaOffsetFlushMs}, plugin.discovery ${r.o.javaDiscovery}`;
  say('');
  say(
    `Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: ${n.toLocaleString('en-US')} records, ${fmt(mb)} MB of Avro (${fmt(r.bytes / n)} B/record), 6 partitions, one task, ` +
      `commit interval ${r.o.intervalMs / 1000} s, REST catalog (PostgreSQL) + S3 (moto); node ${process.version}${versions}. Machine at start: \`${r.uptime}\`.`,
  );
  say('');
  const services = SERVICE_ORDER.filter((s) => r.runs.some((x) => x.services.some((u) => u.name === s)));
  say(
    `| run | load at start | wall s from start / from assignment | records/s from start / from assignment | MB/s of Avro from start / from assignment | sink CPU-s per process | sink CPU-s (of it start-up) | **MB of Avro per sink CPU-s** | ${services.map((s) => `${s} CPU-s`).join(' | ')} | peak RSS, sink | peak RSS, services (${services.join(', ')}) | commits | commit latency p50 / p99 (announced → snapshot) | Java round p50 / p99 (START_COMMIT → snapshot) |`,
  );
  say(`|---|---|---|---|---|---|---|---:|${services.map(() => '---:').join('|')}|---|---|---:|---|---|`);
  for (const x of r.runs) {
    const svc = (name: string): string => {
      const u = x.services.find((s) => s.name === name);
      return u === undefined ? '–' : fmt(u.cpuS);
    };
    const rss = services.map((name) => {
      const u = x.services.find((s) => s.name === name);
      return u === undefined ? '–' : mib(u.peakRssBytes);
    });
    say(
      `| ${x.label} | ${x.load} | ${fmt(x.wallFromStartS)} / ${fmt(x.wallFromAssignS)} | ${int(n / x.wallFromStartS)} / ${int(n / x.wallFromAssignS)} | ${fmt(mb / x.wallFromStartS)} / ${fmt(mb / x.wallFromAssignS)} | ` +
        `${x.sink.map((p) => `${p.name} ${fmt(p.cpuS)}`).join(', ')} | ${fmt(x.sinkCpuS)} (${fmt(x.startupCpuS)}) | **${fmt(mb / x.sinkCpuS, 2)}** | ${services.map(svc).join(' | ')} | ` +
        `${x.sink.map((p) => `${p.name} ${mib(p.hwmBytes)}`).join(', ')} | ${rss.join(', ')} | ${x.commits} | ${ms(x.latencyMs)} | ${ms(x.roundMs)} |`,
    );
  }
  say('');
  // Like with like: each Icefloe run against the Java runs measured the same way (and the whole-life
  // Icefloe run against the warm JVM too, as before the warm Icefloe run existed).
  const run = (label: string): RunResult | undefined => r.runs.find((x) => x.label === label);
  const pairs = [
    ['Icefloe', 'Java cold'],
    ['Icefloe', 'Java warm'],
    ['Icefloe warm', 'Java warm'],
  ].flatMap(([a, b]) => {
    const x = run(a as string);
    const y = run(b as string);
    return x === undefined || y === undefined ? [] : [[x, y] as const];
  });
  if (pairs.length > 0) {
    say(`| ratio | ${pairs.map(([a, b]) => `${a.label} / ${b.label}`).join(' | ')} |`);
    say(`|---|${pairs.map(() => '---:').join('|')}|`);
    const row = (what: string, f: (x: RunResult) => number, digits = 2): void => say(`| ${what} | ${pairs.map(([a, b]) => `${fmt(f(a) / f(b), digits)}×`).join(' | ')} |`);
    row('MB of Avro per sink CPU-second (higher: Icefloe cheaper)', (x) => mb / x.sinkCpuS);
    row('wall MB/s from start (higher: Icefloe faster)', (x) => mb / x.wallFromStartS);
    row('wall MB/s from assignment', (x) => mb / x.wallFromAssignS);
    row('commit latency p50, announced → snapshot (lower: Icefloe faster)', (x) => p50(x.latencyMs));
    say('');
  }
  say('| table | rows | distinct order_id | sum(total) | created_at min / max (µs) | snapshots | data files |');
  say('|---|---:|---:|---:|---|---:|---:|');
  for (const x of r.runs) {
    const c = r.checks.get(x.table);
    if (c === undefined) {
      say(`| ${x.label} (${x.table}) | not read | | | | | |`);
      continue;
    }
    say(`| ${x.label} (${x.table}) | ${int(c.rows)} | ${int(c.distinct_order_ids)} | ${c.total_sum} | ${c.created_min_us ?? '–'} / ${c.created_max_us ?? '–'} | ${c.snapshots} | ${c.data_files} |`);
  }
  say('');
  say(r.failures.length === 0 ? `Read back with PyIceberg: every table holds exactly ${int(n)} rows, the same ones (distinct ids, sums and time range agree).` : `**CHECK FAILED**: ${r.failures.join('; ')}`);
  return md.join('\n');
}

/** What the reader found against N and against the first table: the failures, empty when all agree. */
export function judge(n: number, checks: ReadonlyMap<string, TableCheck>): string[] {
  const out: string[] = [];
  const entries = [...checks.entries()];
  const first = entries[0]?.[1];
  for (const [table, c] of entries) {
    if (c.rows !== n) out.push(`${table} has ${c.rows} rows, expected ${n}`);
    if (c.distinct_order_ids !== n) out.push(`${table} has ${c.distinct_order_ids} distinct order ids, expected ${n}`);
    if (first !== undefined && c !== first) {
      if (c.total_sum !== first.total_sum) out.push(`${table}: sum(total) ${c.total_sum} differs from ${entries[0]?.[0]}'s ${first.total_sum}`);
      if (c.created_min_us !== first.created_min_us || c.created_max_us !== first.created_max_us) out.push(`${table}: created_at range differs from ${entries[0]?.[0]}'s`);
    }
  }
  return out;
}
