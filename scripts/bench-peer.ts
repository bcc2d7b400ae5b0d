/**
 * Side by side with the Apache Iceberg sink (`npm run bench:peer`, issue 15): the same Avro records through
 * Icefloe and through the Apache Iceberg Kafka Connect sink (Java) in a real Kafka Connect worker, in one run
 * on one machine, into the same catalog. A benchmark, not a test: it prints numbers and fails only when a
 * table does not hold exactly the records produced. Needs the local stack (Kafka, registry, REST catalog,
 * S3, PostgreSQL): `bash scripts/stack up`; Java 17 and Maven for the Java side, which
 * scripts/lib/peer-java.sh assembles from Maven Central into ~/.cache/icefloe (before any clock starts).
 *
 *  0. Produce N order events (the generator, seed and event times of `npm run bench`, Confluent-framed
 *     Avro against the stack's registry) to a fresh 6-partition topic, and (for the warm runs) the first
 *     --warmup-records of them to a second topic; not timed.
 *  1. Icefloe: `icefloe standalone`, one task as a child process, commit interval --interval-ms, the stack's
 *     REST catalog over S3, a fresh table; until its 'table committed' lines add up to N.
 *  2. Icefloe warm: measured as Java warm (4.) is: `icefloe standalone` with no connector runs a warm-up
 *     connector over the warm-up topic to its end through its REST API, the connector is deleted (its task
 *     process exits), and the measured one (the settings of 1.) created through the REST API; from that
 *     request until its commits add up to N; CPU: the worker's from the request, the new task's whole life.
 *  3. Java cold: a fresh Connect JVM (ConnectStandalone, file offsets) with the sink connector on its command
 *     line (one task, same interval, catalog and converter settings, fresh table and control topic); from
 *     the JVM's spawn until the coordinator's commits add up to N (Iceberg's CommitReport totalRecords).
 *  4. Java warm: a fresh JVM runs a warm-up connector over the warm-up topic to its end, the connector is
 *     deleted, and the measured one (fresh table, control topic, group) created through the REST API;
 *     from that request until its commits add up to N.
 *  Each run samples from /proc the CPU time and memory of the sink's processes (Icefloe's worker and task;
 *  the Connect JVM) and of the stack's services (broker, S3, catalog, PostgreSQL, registry).
 *  5. Reads every table back with PyIceberg (scripts/lib/peer_table.py): exactly N rows, N distinct order
 *     ids, and the same sum and time range in every table; otherwise the run fails (exit 1).
 * Everything it makes (topics, consumer groups, registry subjects, tables and their files, the namespace,
 * the JVMs, temp directories) is removed at the end, also after a failure or Ctrl-C (--keep keeps the
 * tables and directories). Method and results: docs/benchmarks.md ("Side by side with the Apache Iceberg
 * sink").
 */
import { execFile, execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { requireReachable } from '../test/helpers/stack.ts';
import { START_TIME_MS, cleanUp, cleanUpOnInterrupt, createBench, fmt, generate, load } from './lib/bench-context.ts';
import type { Bench } from './lib/bench-context.ts';
import { UsageError, optionsFromArgv, parseOptions } from './lib/bench-options.ts';
import { installJava } from './lib/bench-peer-java.ts';
import type { JavaInstall } from './lib/bench-peer-java.ts';
import { GroupsSampler, stackServices } from './lib/bench-peer-procs.ts';
import { judge, peerReport } from './lib/bench-peer-report.ts';
import type { TableCheck } from './lib/bench-peer-report.ts';
import { liveJvms, names, runIcefloe, runIcefloeWarm, runJavaCold, runJavaWarm } from './lib/bench-peer-run.ts';
import type { PeerOptions, RunResult } from './lib/bench-peer-run.ts';

const USAGE = `usage: node scripts/bench-peer.ts [records] [options]

  records, --records=N     order events produced once and read by every run (default 1000000)
  --warmup-records=N       records the warm-up connector of the warm runs (the JVM's, Icefloe's) reads
                           first (default 200000, at most N)
  --interval-ms=10000      commit interval of every run (iceberg.control.commit.interval-ms)
  --java-heap=2G           the Connect JVM's -Xmx (bin/connect-standalone.sh's default)
  --java-offset-flush-ms=1000  the Connect worker's offset.flush.interval.ms: also how long a sink task
                           without new records sleeps before the Iceberg sink can answer a commit request
                           (Connect's default, 60000, stalls the last commit of a drained topic)
  --java-plugin-discovery=service_load  the worker's plugin.discovery; hybrid_warn (Connect's default)
                           also scans every class of the plugin path at start (cold start-up)
  --skip=LIST              leave out runs: icefloe, icefloe-warm, java-cold, java-warm (e.g. --skip-java-warm)
  --skip-icefloe --skip-icefloe-warm --skip-java-cold --skip-java-warm
  --logs=DIR               keep every worker's log there
  --keep                   keep the tables and temp directories
  --out=FILE.md            also write the report there
`;

interface Options extends PeerOptions {
  readonly logs: string | undefined;
  readonly keep: boolean;
  readonly out: string | undefined;
}

function parse(argv: readonly string[]): Options {
  const v = new Map<string, string>();
  let keep = false;
  const skip = new Set<string>();
  const RUNS = ['icefloe', 'icefloe-warm', 'java-cold', 'java-warm'];
  for (const arg of argv) {
    const m = /^--([a-z-]+)=(.*)$/.exec(arg);
    const flag = /^--skip-(icefloe|icefloe-warm|java-cold|java-warm)$/.exec(arg);
    if (/^\d+$/.test(arg)) v.set('records', arg);
    else if (arg === '--keep') keep = true;
    else if (flag !== null) skip.add(flag[1] as string);
    else if (m !== null && m[1] === 'skip') {
      for (const s of (m[2] as string).split(',').filter((x) => x !== '')) {
        if (!RUNS.includes(s)) throw new UsageError(`unknown run '${s}' (${RUNS.join(', ')})`);
        skip.add(s);
      }
    } else if (m !== null && ['records', 'warmup-records', 'interval-ms', 'java-heap', 'java-offset-flush-ms', 'java-plugin-discovery', 'logs', 'out'].includes(m[1] as string)) v.set(m[1] as string, m[2] as string);
    else throw new UsageError(`unknown argument '${arg}'`);
  }
  const num = (name: string, fallback: number): number => {
    const n = Number(v.get(name) ?? fallback);
    if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer, not '${v.get(name)}'`);
    return n;
  };
  const heap = v.get('java-heap') ?? '2G';
  if (!/^\d+[kKmMgG]?$/.test(heap)) throw new UsageError(`--java-heap must be a JVM size (512M, 2G), not '${heap}'`);
  const discovery = v.get('java-plugin-discovery') ?? 'service_load';
  if (!['only_scan', 'hybrid_warn', 'hybrid_fail', 'service_load'].includes(discovery)) throw new UsageError(`--java-plugin-discovery must be one of only_scan, hybrid_warn, hybrid_fail, service_load, not '${discovery}'`);
  if (skip.size === RUNS.length) throw new UsageError('no run left');
  const records = num('records', 1_000_000);
  return {
    records,
    warmupRecords: Math.min(records, num('warmup-records', 200_000)),
    intervalMs: num('interval-ms', 10_000),
    javaHeap: heap,
    javaOffsetFlushMs: num('java-offset-flush-ms', 1000),
    javaDiscovery: discovery,
    icefloe: !skip.has('icefloe'),
    icefloeWarm: !skip.has('icefloe-warm'),
    javaCold: !skip.has('java-cold'),
    javaWarm: !skip.has('java-warm'),
    logs: v.get('logs'),
    keep,
    out: v.get('out'),
  };
}

/** The readers venv's Python with the stack's endpoints, running scripts/lib/peer_table.py. */
function peerTable(b: Bench, args: readonly string[]): Promise<string> {
  const s = b.stack;
  const env = {
    ...process.env,
    ICEFLOE_CATALOG_URI: s.catalogUri,
    ICEFLOE_CATALOG_NAME: s.catalogName,
    ICEFLOE_CATALOG_WAREHOUSE: s.catalogWarehouse,
    ICEFLOE_S3_ENDPOINT: s.s3Endpoint,
    ICEFLOE_S3_ACCESS_KEY: s.s3AccessKey,
    ICEFLOE_S3_SECRET_KEY: s.s3SecretKey,
    ICEFLOE_S3_REGION: s.s3Region,
  };
  const script = new URL('lib/peer_table.py', import.meta.url).pathname;
  return new Promise((res, rej) => {
    execFile(s.python, [script, ...args], { env, maxBuffer: 16 * 1024 * 1024, timeout: 600_000 }, (err, stdout, stderr) => (err ? rej(new Error(`peer_table.py ${args[0]}: ${stderr.trim() || err.message}`)) : res(stdout)));
  });
}

async function run(b: Bench, o: Options): Promise<{ md: string; ok: boolean }> {
  await requireReachable('Kafka', b.stack.kafkaBootstrap);
  await requireReachable('Schema Registry', b.stack.registryUrl);
  await requireReachable('REST catalog', b.stack.catalogUri);
  await requireReachable('S3', b.stack.s3Endpoint);
  const uptime = execFileSync('uptime', { encoding: 'utf8' }).trim();
  console.log(`bench:peer ${b.runId}: ${o.records.toLocaleString('en-US')} order events, 6 partitions, one task, commit interval ${o.intervalMs} ms; runs ${[o.icefloe && 'icefloe', o.icefloeWarm && 'icefloe-warm', o.javaCold && 'java-cold', o.javaWarm && 'java-warm'].filter((x) => x !== false).join(', ')}; ${uptime}`);

  const install: JavaInstall | undefined = o.javaCold || o.javaWarm ? installJava() : undefined;

  // The run's tables live in a namespace of their own, dropped (with purge) at the end.
  const namespace = `bench_peer_${b.runId.replace(/^bench-/, '').replaceAll('-', '_')}`;
  const tables: string[] = [];
  b.cleanups.push(async () => {
    for (const w of liveJvms) await w.kill();
    liveJvms.clear();
  });
  b.cleanups.push(async () => {
    if (o.keep) {
      if (tables.length > 0) console.log(`  kept tables: ${tables.join(' ')}`);
      return;
    }
    await peerTable(b, ['drop', namespace, ...tables]);
  });

  const topic = `${b.runId}-orders`;
  const g0 = performance.now();
  const produced = await generate(b, topic, o.records, { startTimeMs: START_TIME_MS });
  if (produced.records !== o.records) throw new Error(`produced ${produced.records} of ${o.records}`);
  console.log(`  produced ${o.records.toLocaleString('en-US')} records, ${fmt(produced.bytes / 1e6)} MB of Avro values in ${fmt((performance.now() - g0) / 1000)} s (not timed)`);
  const warmTopic = `${b.runId}-warmup`;
  if (o.javaWarm || o.icefloeWarm) {
    // The first records of the same sequence: the warm-up sees the same shapes of data.
    const w = await generate(b, warmTopic, o.warmupRecords, { startTimeMs: START_TIME_MS });
    console.log(`  produced the warm-up topic: ${w.records.toLocaleString('en-US')} records (not timed)`);
  }

  const sampler = new GroupsSampler();
  for (const s of stackServices(b.stack.run)) sampler.track(s);
  sampler.start();
  const runs: RunResult[] = [];
  try {
    if (o.icefloe) {
      const c = names(b, namespace, 'icefloe', topic);
      tables.push(c.table);
      console.log(`  icefloe: icefloe standalone, 1 task (process), table ${c.table}; load ${load()}`);
      const r = await runIcefloe(b, o, sampler, c);
      runs.push(r);
      console.log(`    ${fmt(r.wallFromStartS)} s from start, ${fmt(r.wallFromAssignS)} s from assignment; sink CPU ${fmt(r.sinkCpuS)} s; ${r.commits} commits`);
    }
    if (o.icefloeWarm) {
      const warm = names(b, namespace, 'icefloe-warmup', warmTopic);
      const c = names(b, namespace, 'icefloe-warm', topic);
      tables.push(warm.table, c.table);
      console.log(`  icefloe warm: icefloe standalone warmed up on ${o.warmupRecords.toLocaleString('en-US')} records, then the connector through REST, table ${c.table}; load ${load()}`);
      const r = await runIcefloeWarm(b, o, sampler, warm, c);
      runs.push(r);
      console.log(`    ${fmt(r.wallFromStartS)} s from the connector's creation, ${fmt(r.wallFromAssignS)} s from assignment; sink CPU ${fmt(r.sinkCpuS)} s; ${r.commits} commits`);
    }
    if (o.javaCold && install !== undefined) {
      const c = names(b, namespace, 'java-cold', topic);
      tables.push(c.table);
      console.log(`  java cold: a fresh Connect JVM with the connector, table ${c.table}; load ${load()}`);
      const r = await runJavaCold(b, o, sampler, install, c);
      runs.push(r);
      console.log(`    ${fmt(r.wallFromStartS)} s from start, ${fmt(r.wallFromAssignS)} s from assignment; JVM CPU ${fmt(r.sinkCpuS)} s; ${r.commits} commits`);
    }
    if (o.javaWarm && install !== undefined) {
      const warm = names(b, namespace, 'java-warmup', warmTopic);
      const c = names(b, namespace, 'java-warm', topic);
      tables.push(warm.table, c.table);
      console.log(`  java warm: a Connect JVM warmed up on ${o.warmupRecords.toLocaleString('en-US')} records, then the connector, table ${c.table}; load ${load()}`);
      const r = await runJavaWarm(b, o, sampler, install, warm, c);
      runs.push(r);
      console.log(`    ${fmt(r.wallFromStartS)} s from the connector's creation, ${fmt(r.wallFromAssignS)} s from assignment; JVM CPU ${fmt(r.sinkCpuS)} s; ${r.commits} commits`);
    }
  } finally {
    sampler.stop();
  }

  console.log(`  reading the tables back with PyIceberg`);
  const checked = JSON.parse(await peerTable(b, ['check', ...runs.map((r) => r.table)])) as Record<string, TableCheck>;
  const checks = new Map(Object.entries(checked));
  const failures = judge(o.records, checks);
  const md = peerReport({ o, bytes: produced.bytes, loadAtStart: load(), uptime, install, runs, checks, failures });
  if (failures.length > 0) {
    for (const [table, c] of checks) console.error(`  ${table} schema:\n${c.schema}`);
  }
  return { md, ok: failures.length === 0 };
}

const opts = optionsFromArgv('bench:peer', USAGE, parse);
// The shared bench context (run id, stack endpoints, generator, cleanup register) with this run's settings.
const bench = await createBench(parseOptions([`--records=${opts.records}`, `--interval-ms=${opts.intervalMs}`, '--phases=throughput1', ...(opts.logs === undefined ? [] : [`--logs=${opts.logs}`]), ...(opts.keep ? ['--keep'] : [])]));

cleanUpOnInterrupt(bench);

let code = 0;
try {
  const { md, ok } = await run(bench, opts);
  if (opts.out !== undefined) writeFileSync(opts.out, `${md}\n`);
  if (!ok) code = 1;
} catch (e) {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  code = 1;
} finally {
  await cleanUp(bench);
}
process.exit(code);
