/**
 * A sink connector on memory fakes: the in-memory Kafka (src/consume/memory/), object store
 * (src/upload/memory.ts) and catalog (src/commit/memory.ts). Drives the real SinkTask, TaskChannel, SinkWriter and
 * ConnectorCommitter through the exactly-once rules in milliseconds; the e2e suite proves the same on
 * the real services.
 *
 * Records are schemaless JSON `{"n": <seq>}` with the Kafka metadata columns partition and offset, so a
 * table's rows can be counted by their Kafka coordinates.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../../src/core/log.ts';
import { NO_CRASH_POINTS } from '../../../src/core/crash-points.ts';
import type { CrashPoints } from '../../../src/core/crash-points.ts';
import { parseConnectorConfig } from '../../../src/config/connector-config.ts';
import type { ConnectorConfig } from '../../../src/config/connector-config.ts';
import { MemoryKafka } from '../../../src/consume/memory/index.ts';
import type { MemoryKafkaSource, MemoryTransactionalProducer } from '../../../src/consume/memory/index.ts';
import type { Catalog } from '../../../src/commit/port.ts';
import { parseIdentifier } from '../../../src/commit/port.ts';
import { MemoryCatalog } from '../../../src/commit/memory.ts';
import { ConnectorCommitter } from '../../../src/coordinate/committer.ts';
import { readManifest } from '../../../src/iceberg/manifest.ts';
import { readManifestList } from '../../../src/iceberg/manifest-list.ts';
import { currentSchema } from '../../../src/iceberg/metadata.ts';
import { valueFormat } from '../../../src/decode/value-format.ts';
import type { SchemaResolver } from '../../../src/decode/registry-port.ts';
import type { BackoffBounds } from '../../../src/core/retry.ts';
import { SinkTask } from '../../../src/runtime/task.ts';
import type { StallBound } from '../../../src/runtime/watchdog.ts';
import { MemoryObjectStore } from '../../../src/upload/memory.ts';
import type { MemoryOperation } from '../../../src/upload/memory.ts';
import { readBack } from '../write/helpers.ts';

export const TOPIC = 'orders';
export const CONTROL = 'control-orders';
export const TABLE = 'db.orders';

export interface LogLine {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly msg: string;
  readonly fields: Record<string, unknown>;
}

/** A logger that keeps every line (tests assert on what an operator would see). */
export function recordingLogger(lines: LogLine[], bound: Record<string, unknown> = {}): Logger {
  const at =
    (level: LogLine['level']) =>
    (msg: string, fields: Readonly<Record<string, unknown>> = {}): void => {
      lines.push({ level, msg, fields: { ...bound, ...fields } });
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (b) => recordingLogger(lines, { ...bound, ...b }) };
}

export interface RunningTask {
  readonly task: SinkTask;
  readonly source: MemoryKafkaSource;
  readonly producer: MemoryTransactionalProducer;
  readonly clientId: string;
  /** Settles when run() ends; never rejects (the error, if any, is the value). */
  readonly ended: Promise<unknown>;
  stop(): Promise<unknown>;
}

export interface RigOptions {
  readonly partitions?: number;
  /** Extra connector keys (e.g. commit triggers). */
  readonly config?: Readonly<Record<string, string>>;
  /** The schema registry of a registry converter (e.g. Avro with a fake registry). */
  readonly resolver?: SchemaResolver;
  /** Called before each object-store operation; throwing fails it (an outage of the store). */
  readonly beforeStoreOperation?: (op: MemoryOperation, location: string) => void;
}

export class Rig {
  readonly kafka = new MemoryKafka();
  readonly store: MemoryObjectStore;
  /** The in-memory catalog (src/commit/memory.ts), with its fault queues and hooks. */
  readonly memoryCatalog: MemoryCatalog;
  readonly catalog: Catalog;
  readonly connector: ConnectorConfig;
  readonly log: LogLine[] = [];
  private readonly running: RunningTask[] = [];
  private readonly resolver: SchemaResolver | undefined;
  private seq = 0;

  constructor(options: RigOptions = {}) {
    this.resolver = options.resolver;
    this.store = new MemoryObjectStore(options.beforeStoreOperation === undefined ? {} : { beforeOperation: options.beforeStoreOperation });
    this.kafka.createTopic(TOPIC, options.partitions ?? 2);
    this.kafka.createTopic(CONTROL, 1, { 'cleanup.policy': 'delete' });
    this.memoryCatalog = new MemoryCatalog({ store: this.store, warehouse: 'memory://warehouse' });
    this.catalog = this.memoryCatalog;
    this.connector = parseConnectorConfig({
      name: 'orders-sink',
      'connector.class': 'org.apache.iceberg.connect.IcebergSinkConnector',
      topics: TOPIC,
      'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
      'value.converter.schemas.enable': 'false',
      'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
      'iceberg.tables': TABLE,
      'iceberg.tables.auto-create-enabled': 'true',
      'iceberg.control.topic': CONTROL,
      // The catalog object is built here (the memory catalog); these keys only satisfy validation.
      'iceberg.catalog.type': 'sql',
      'iceberg.catalog.uri': 'jdbc:sqlite::memory:',
      'iceberg.catalog.warehouse': 'memory://warehouse',
      'iceberg.control.commit.interval-ms': '600000',
      'icefloe.commit.max-records': '10',
      'icefloe.tables.kafka-metadata-columns': 'partition,offset',
      ...options.config,
    });
  }

  async init(): Promise<this> {
    await this.catalog.createNamespace(['db']);
    return this;
  }

  /** Produces `count` records to a partition; returns their offsets. */
  produce(partition: number, count: number): bigint[] {
    const records = Array.from({ length: count }, () => ({ key: `k${this.seq}`, value: JSON.stringify({ n: this.seq++ }), timestamp: 1_700_000_000_000 + this.seq }));
    return this.kafka.produce(TOPIC, partition, records);
  }

  /** Starts a task (its own consumer and transactional producer) and runs it until stopped. */
  startTask(
    taskId: number,
    options: { crash?: CrashPoints; onAnnounced?: () => void; schemaWaitBackoff?: BackoffBounds; random?: () => number; nowMs?: () => number; sleep?: (ms: number) => Promise<void>; stallBound?: StallBound } = {},
  ): RunningTask {
    const clientId = `orders-sink-${taskId}-${randomUUID().slice(0, 4)}`;
    const source = this.kafka.createSource({ groupId: `connect-${this.connector.name}`, clientId });
    const producer = this.kafka.createProducer(`${this.connector.name}-${taskId}`);
    const task = new SinkTask({
      connector: this.connector,
      taskId,
      source,
      producer,
      catalog: this.catalog,
      store: this.store,
      format: valueFormat(this.connector.valueConverter as NonNullable<ConnectorConfig['valueConverter']>, this.resolver, { caseInsensitive: false, forceOptional: true }),
      keyConverter: 'string',
      crash: options.crash ?? NO_CRASH_POINTS,
      log: recordingLogger(this.log),
      sleep: options.sleep ?? (() => new Promise((resolve) => setTimeout(resolve, 1))),
      ...(options.nowMs === undefined ? {} : { nowMs: options.nowMs }),
      ...(options.onAnnounced === undefined ? {} : { onAnnounced: options.onAnnounced }),
      ...(options.schemaWaitBackoff === undefined ? {} : { schemaWaitBackoff: options.schemaWaitBackoff }),
      ...(options.random === undefined ? {} : { random: options.random }),
      ...(options.stallBound === undefined ? {} : { stallBound: options.stallBound }),
    });
    const ended: Promise<unknown> = task.run().then(
      () => undefined,
      (e: unknown) => e,
    );
    const running: RunningTask = {
      task,
      source,
      producer,
      clientId,
      ended,
      stop: () => {
        task.stop();
        return ended;
      },
    };
    this.running.push(running);
    return running;
  }

  /** Stops every task still running (a failed test must not leave loops behind). */
  async close(): Promise<void> {
    await Promise.all(this.running.map((r) => r.stop()));
  }

  committer(crash: CrashPoints = NO_CRASH_POINTS, catalog: Catalog = this.catalog): ConnectorCommitter {
    return new ConnectorCommitter({
      connector: this.connector,
      reader: this.kafka.createControlReader({ name: `committer-${randomUUID().slice(0, 4)}` }),
      admin: this.kafka.createAdmin(),
      catalog,
      store: this.store,
      crash,
      log: recordingLogger(this.log),
    });
  }

  /** The group's committed offset of a source partition (null: none). */
  committedOffset(partition: number): bigint | null {
    return this.kafka.committed(`connect-${this.connector.name}`, { topic: TOPIC, partition });
  }

  /** The data files of the table's current snapshot (or of the head of branch `ref`). */
  async tableFiles(table: string = TABLE, ref?: string): Promise<string[]> {
    const md = (await this.catalog.loadTable(parseIdentifier(table))).metadata;
    const head = ref === undefined ? md.currentSnapshotId : md.refs[ref]?.snapshotId;
    const snap = md.snapshots.find((s) => s.snapshotId === head);
    if (snap === undefined) return [];
    const out: string[] = [];
    for (const m of readManifestList(await this.store.get(snap.manifestList)).manifests) {
      for (const e of readManifest(await this.store.get(m.manifestPath)).entries) if (e.status !== 2) out.push(e.dataFile.filePath); // 2: deleted
    }
    return out;
  }

  /** Every row of the table's current snapshot (or of the head of branch `ref`) as `partition/offset`, in file order. */
  async tableCoordinates(table: string = TABLE, ref?: string): Promise<string[]> {
    const schema = currentSchema((await this.catalog.loadTable(parseIdentifier(table))).metadata);
    const out: string[] = [];
    for (const path of await this.tableFiles(table, ref)) {
      const { rows } = await readBack(await this.store.get(path), schema);
      for (const r of rows) out.push(`${String(r['_kafka_metadata_partition'])}/${String(r['_kafka_metadata_offset'])}`);
    }
    return out;
  }

  /** Data files in the object store, referenced or not. */
  async storedDataFiles(): Promise<string[]> {
    const out: string[] = [];
    for await (const o of this.store.list('memory://warehouse')) if (o.location.endsWith('.parquet')) out.push(o.location);
    return out;
  }

  /** Announcements on the control topic that are committed (visible to the committer). */
  committedAnnouncements(): number {
    return this.kafka.readPartition(CONTROL, 0).filter((e) => e.kind === 'record' && e.state === 'committed' && e.record?.value != null && new TextDecoder().decode(e.record.value).includes('"announcement"')).length;
  }
}

/** The fields of every log line with this message, in order. */
export function logged(rig: Rig, msg: string): Record<string, unknown>[] {
  return rig.log.filter((l) => l.msg === msg).map((l) => l.fields);
}

/** Polls `cond` every millisecond until it holds; fails after `ms` with `what`. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** `partition/offset` for every offset produced, sorted like `sortCoordinates`. */
export function expected(partitions: Readonly<Record<number, readonly bigint[]>>): string[] {
  return sortCoordinates(Object.entries(partitions).flatMap(([p, offsets]) => offsets.map((o) => `${p}/${o}`)));
}

export function sortCoordinates(c: readonly string[]): string[] {
  return [...c].sort((a, b) => {
    const [pa, oa] = a.split('/').map(BigInt) as [bigint, bigint];
    const [pb, ob] = b.split('/').map(BigInt) as [bigint, bigint];
    return pa === pb ? (oa < ob ? -1 : oa > ob ? 1 : 0) : pa < pb ? -1 : 1;
  });
}

/** Runs one task over `count` records per partition (one cycle each), then stops it; returns the offsets produced. */
export async function announce(rig: Rig, counts: readonly number[]): Promise<Record<number, bigint[]>> {
  const produced: Record<number, bigint[]> = {};
  counts.forEach((n, p) => (produced[p] = rig.produce(p, n)));
  const task = rig.startTask(0);
  await until('offsets committed', () => Object.entries(produced).every(([p, offsets]) => rig.committedOffset(Number(p)) === (offsets.at(-1) ?? -1n) + 1n));
  await task.stop();
  return produced;
}

/** The pause/resume/topics controls of a scripted TaskHandle that does nothing with them. */
export const IDLE_CONTROLS = {
  pause: (): void => undefined,
  resume: (): void => undefined,
  topics: (): readonly string[] => [],
  forgetTopics: (): void => undefined,
};
