/**
 * The Java side of `npm run bench:peer`: a real Apache Kafka Connect worker (ConnectStandalone, a file
 * offset store) running the Apache Iceberg sink (org.apache.iceberg.connect.IcebergSinkConnector), both
 * assembled from Maven Central by scripts/lib/peer-java.sh, with Apicurio's AvroConverter reading the same
 * Confluent-framed bytes against the stack's registry.
 *
 * The worker runs on Java 17 with the JVM options Kafka's own bin/connect-standalone.sh uses by default
 * (G1, -Xms256M, -Xmx2G unless --java-heap says otherwise), logs through log4j2 at INFO (Connect's default)
 * with epoch-millisecond timestamps and thread names, and is read through its log lines:
 * - first assignment: the sink consumer's `Found no committed offset` / `newly assigned partitions` lines;
 * - a commit: the coordinator's `initiated commit <id>`, the task's `Sending event of type: DATA_WRITTEN`
 *   (its thread is the task's), Iceberg's CommitReport (`totalRecords` of the table after the snapshot) and
 *   `completed commit to table <t>, snapshot <s>, commit ID <id>`;
 * - the control consumer groups the sink makes (`cg-control-<uuid>`, `<connector>-coord`), for cleanup.
 */
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { restCatalogKeys } from '../../test/helpers/sink-e2e.ts';
import type { Bench } from './bench-context.ts';
import { sleep } from './bench-context.ts';
import { connectorFailure, deleteConnector, putConnectorConfig } from './connect-rest.ts';

const ROOT = new URL('../../', import.meta.url);

export interface JavaInstall {
  readonly java: string;
  readonly connectLib: string;
  readonly pluginPath: string;
  readonly kafkaVersion: string;
  readonly icebergVersion: string;
  readonly converterVersion: string;
}

/** Installs what is missing (idempotent; progress on stderr) and says where it is. */
export function installJava(): JavaInstall {
  const out = execFileSync('bash', [new URL('scripts/lib/peer-java.sh', ROOT).pathname, 'install'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const kv = new Map(out.split('\n').map((l) => l.split('=', 2) as [string, string]).filter((p) => p.length === 2));
  const get = (k: string): string => {
    const v = kv.get(k);
    if (v === undefined) throw new Error(`scripts/lib/peer-java.sh install did not say ${k}:\n${out}`);
    return v;
  };
  return { java: get('JAVA'), connectLib: get('CONNECT_LIB'), pluginPath: get('PLUGIN_PATH'), kafkaVersion: get('KAFKA_VERSION'), icebergVersion: get('ICEBERG_VERSION'), converterVersion: get('CONVERTER_VERSION') };
}

/**
 * The value converter's keys: Apicurio's AvroConverter reading the Confluent wire format (magic byte, 4-byte
 * schema id, no Apicurio headers) and looking ids up as content ids, which is what the ids of the registry's
 * Confluent-compatible API are (Apicurio 3 with legacy id mode off), through the registry's v2 API.
 */
export function converterKeys(registryUrl: string): Record<string, string> {
  const v2 = registryUrl.replace(/\/apis\/ccompat\/v\d+\/?$/, '/apis/registry/v2');
  return {
    'value.converter': 'io.apicurio.registry.utils.converter.AvroConverter',
    'value.converter.apicurio.registry.url': v2,
    'value.converter.apicurio.registry.id-handler': 'io.apicurio.registry.serde.Legacy4ByteIdHandler',
    'value.converter.apicurio.registry.use-id': 'contentId',
    'value.converter.apicurio.registry.headers.enabled': 'false',
  };
}

export interface JavaConnector {
  readonly name: string;
  readonly topic: string;
  readonly table: string;
  readonly control: string;
}

export function connectorConfig(bench: Bench, c: JavaConnector, intervalMs: number): Record<string, string> {
  return {
    'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
    'tasks.max': '1',
    topics: c.topic,
    'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
    ...converterKeys(bench.stack.registryUrl),
    'iceberg.tables': c.table,
    'iceberg.tables.auto-create-enabled': 'true',
    'iceberg.control.topic': c.control,
    'iceberg.control.commit.interval-ms': String(intervalMs),
    ...restCatalogKeys(),
  };
}

/** One table commit of the Java sink, from its log lines. */
export interface JavaCommit {
  readonly time: number;
  readonly commitId: string;
  readonly table: string;
  /** Records the snapshot added (CommitReport totalRecords minus the previous one). */
  readonly records: number;
  /** The coordinator's START_COMMIT for this commit id. */
  readonly initiatedAt: number | undefined;
  /** The first DATA_WRITTEN the connector's task sent after that START_COMMIT. */
  readonly dataWrittenAt: number | undefined;
}

interface Line {
  readonly t: number;
  readonly thread: string;
  readonly msg: string;
}

/** `<epoch ms> <level> [<thread>] <message> (<logger>)`: the message without its logger. */
const LINE = /^(\d{13}) (\w+) \[([^\]]*)\] (.*?)(?: \([\w.$]+\))?$/;

/** Parsed log state of one connector. */
export class ConnectorLog {
  firstAssignedAt: number | undefined;
  /** The table's totalRecords after the last completed commit. */
  totalRecords = 0;
  /** totalRecords of a CommitReport whose 'completed commit' line has not come yet. */
  pendingTotal: number | undefined;
  readonly commits: JavaCommit[] = [];
  readonly initiated = new Map<string, number>();
  readonly dataWritten: number[] = [];
  readonly c: JavaConnector;
  constructor(c: JavaConnector) {
    this.c = c;
  }
}

export interface JavaWorkerOptions {
  readonly install: JavaInstall;
  readonly dir: string;
  /** -Xmx (connect-standalone.sh's default: 2G). */
  readonly heap: string;
  /** The worker's offset.flush.interval.ms (see start()). */
  readonly offsetFlushMs: number;
  /** plugin.discovery: service_load (manifests only) or Connect's default hybrid_warn (scans the plugin path). */
  readonly discovery: string;
  /** Connectors started with the worker (a properties file each, on the command line). */
  readonly connectors: readonly { c: JavaConnector; config: Record<string, string> }[];
}

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a !== null ? a.port : 0;
      s.close(() => res(port));
    });
  });
}

function properties(entries: Record<string, string>): string {
  return Object.entries(entries).map(([k, v]) => `${k}=${v.replace(/\\/g, '\\\\')}`).join('\n') + '\n';
}

/** A Connect worker process and what its log lines said so far. */
export class JavaWorker {
  readonly lines: string[] = [];
  readonly groups = new Set<string>();
  readonly spawnedAt: number;
  readonly exited: Promise<string>;
  private readonly logs = new Map<string, ConnectorLog>();
  private exitedHow: string | undefined;
  private partial = '';

  readonly child: ChildProcess;
  readonly url: string;

  private constructor(child: ChildProcess, url: string) {
    this.child = child;
    this.url = url;
    this.spawnedAt = Date.now();
    this.exited = new Promise((res) => child.on('exit', (code, signal) => res((this.exitedHow = signal ?? String(code)))));
    for (const s of [child.stdout, child.stderr]) {
      s?.setEncoding('utf8');
      s?.on('data', (chunk: string) => this.onData(chunk));
    }
  }

  get pid(): number {
    return this.child.pid as number;
  }

  static async start(bench: Bench, o: JavaWorkerOptions): Promise<JavaWorker> {
    const port = await freePort();
    const worker = {
      'bootstrap.servers': bench.stack.kafkaBootstrap,
      'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
      'value.converter': 'org.apache.kafka.connect.storage.StringConverter',
      'offset.storage.file.filename': join(o.dir, 'connect.offsets'),
      // Also how long a sink task with no new records sleeps in poll() before put() runs again, and only
      // put() lets the Iceberg sink answer the coordinator's START_COMMIT: with the default (60 s) the last
      // commit of a drained topic waits up to a minute and rounds in between time out. The sink manages
      // its offsets through the control topic (preCommit commits nothing), so a short interval costs nothing.
      'offset.flush.interval.ms': String(o.offsetFlushMs),
      listeners: `http://127.0.0.1:${port}`,
      'plugin.path': o.install.pluginPath,
      // Every plugin declares itself (peer-java.sh adds the converter's manifest): no scan of the plugin jars.
      'plugin.discovery': o.discovery,
    };
    writeFileSync(join(o.dir, 'worker.properties'), properties(worker));
    // log4j2 at Connect's default level; epoch milliseconds and the thread name for the parser above.
    writeFileSync(
      join(o.dir, 'log4j2.properties'),
      [
        'status = warn',
        'appender.out.type = Console',
        'appender.out.name = OUT',
        'appender.out.layout.type = PatternLayout',
        'appender.out.layout.pattern = %d{UNIX_MILLIS} %p [%t] %m (%c)%n',
        'rootLogger.level = info',
        'rootLogger.appenderRef.out.ref = OUT',
        '',
      ].join('\n'),
    );
    const files = o.connectors.map(({ c, config }) => {
      const f = join(o.dir, `${c.name}.properties`);
      writeFileSync(f, properties({ name: c.name, ...config }));
      return f;
    });
    // bin/connect-standalone.sh's defaults (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS), heap from --java-heap.
    const jvm = ['-Xms256M', `-Xmx${o.heap}`, '-server', '-XX:+UseG1GC', '-XX:MaxGCPauseMillis=20', '-XX:InitiatingHeapOccupancyPercent=35', '-XX:+ExplicitGCInvokesConcurrent', '-XX:MaxInlineLevel=15', '-Djava.awt.headless=true'];
    const child = spawn(o.install.java, [...jvm, `-Dlog4j2.configurationFile=${join(o.dir, 'log4j2.properties')}`, '-cp', `${o.install.connectLib}/*`, 'org.apache.kafka.connect.cli.ConnectStandalone', join(o.dir, 'worker.properties'), ...files], {
      cwd: o.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: sampled and killed as one
    });
    const w = new JavaWorker(child, `http://127.0.0.1:${port}`);
    for (const { c } of o.connectors) w.watch(c);
    return w;
  }

  /** Follows a connector's lines from now on (before it is created). */
  watch(c: JavaConnector): void {
    this.logs.set(c.name, new ConnectorLog(c));
    this.groups.add(`connect-${c.name}`);
  }

  of(name: string): ConnectorLog {
    const l = this.logs.get(name);
    if (l === undefined) throw new Error(`connector ${name} is not watched`);
    return l;
  }

  private onData(chunk: string): void {
    this.partial += chunk;
    let nl: number;
    while ((nl = this.partial.indexOf('\n')) >= 0) {
      const line = this.partial.slice(0, nl);
      this.partial = this.partial.slice(nl + 1);
      this.lines.push(line);
      const m = LINE.exec(line);
      if (m !== null) this.onLine({ t: Number(m[1]), thread: m[3] as string, msg: m[4] as string });
    }
  }

  private onLine(l: Line): void {
    for (const g of l.msg.matchAll(/groupId=(cg-control-[\w-]+|[\w.-]+-coord)\b/g)) this.groups.add(g[1] as string);
    for (const log of this.logs.values()) {
      const name = log.c.name;
      if (log.firstAssignedAt === undefined && l.msg.includes(`clientId=connector-consumer-${name}-0,`) && /Found no committed offset|newly assigned partitions|Setting offset for partition/.test(l.msg)) {
        log.firstAssignedAt = l.t;
      }
      if (l.msg.startsWith(`Coordinator ${name}-0 initiated commit `)) {
        log.initiated.set(l.msg.slice(`Coordinator ${name}-0 initiated commit `.length).trim(), l.t);
      }
      if (l.thread === `task-thread-${name}-0` && l.msg.startsWith('Sending event of type: DATA_WRITTEN')) log.dataWritten.push(l.t);
      const report = /^Received metrics report: CommitReport\{tableName=[^.]+\.(\S+?), .*totalRecords=CounterResult\{unit=COUNT, value=(\d+)\}/.exec(l.msg);
      if (report !== null && report[1] === log.c.table) log.pendingTotal = Number(report[2]);
      const done = new RegExp(`^Coordinator ${name}-0 completed commit to table (\\S+), snapshot \\d+, commit ID ([\\w-]+)`).exec(l.msg);
      if (done !== null && done[1] === log.c.table) {
        const commitId = done[2] as string;
        const initiatedAt = log.initiated.get(commitId);
        const total = log.pendingTotal ?? log.totalRecords;
        log.commits.push({
          time: l.t,
          commitId,
          table: log.c.table,
          records: total - log.totalRecords,
          initiatedAt,
          dataWrittenAt: initiatedAt === undefined ? undefined : log.dataWritten.find((t) => t >= initiatedAt),
        });
        log.totalRecords = total;
        log.pendingTotal = undefined;
      }
    }
  }

  /** Creates (or reconfigures) a connector through the REST API; resolves, once answered, with when it was asked. */
  putConnector(c: JavaConnector, config: Record<string, string>): Promise<number> {
    this.watch(c);
    return putConnectorConfig(this.url, c.name, config);
  }

  deleteConnector(name: string): Promise<void> {
    return deleteConnector(this.url, name);
  }

  /** Polls until `cond` holds; fails if the worker exits, a task of `name` FAILED, or after `timeoutMs`. */
  async waitUntil(what: string, name: string, cond: () => boolean, timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    let lastStatus = 0;
    for (;;) {
      if (cond()) return;
      if (this.exitedHow !== undefined) throw new Error(`the Connect worker exited (${this.exitedHow}) while waiting for ${what}; last lines:\n${this.tail()}`);
      if (Date.now() > until) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}; last lines:\n${this.tail()}`);
      if (Date.now() - lastStatus > 5000) {
        lastStatus = Date.now();
        const trace = await connectorFailure(this.url, name);
        if (trace !== undefined) throw new Error(`connector ${name} failed while waiting for ${what}:\n${trace}`);
      }
      await sleep(50);
    }
  }

  tail(n = 25): string {
    return this.lines.slice(-n).map((l) => l.slice(0, 400)).join('\n');
  }

  /** SIGTERM (Connect stops its connectors), SIGKILL to the group after `timeoutMs`. */
  async stop(timeoutMs = 30_000): Promise<string> {
    if (this.exitedHow !== undefined) return this.exitedHow;
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), timeoutMs);
    const how = await this.exited;
    clearTimeout(timer);
    return how;
  }

  kill(): Promise<string> {
    if (this.exitedHow === undefined) this.signal('SIGKILL');
    return this.exited;
  }

  private signal(s: NodeJS.Signals): void {
    try {
      process.kill(-this.pid, s);
    } catch {
      // already gone
    }
  }
}
