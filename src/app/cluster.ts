/**
 * The composition root's cluster part (distributed mode, docs/design/cluster.md): wires the config and
 * status topics (runtime/cluster/ over the confluent adapters), the Redis coordination adapter, and the
 * committer's lease around the committer app.ts opens. Only app.ts imports it.
 */
import { RequestRefused, errorMessage } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { ClusterSettings, WorkerConfig } from '../config/worker-config.ts';
import { ConfluentControlTopicReader, ConfluentKafkaAdmin, ConfluentRecordProducer } from '../consume/confluent/index.ts';
import type { ClientSettings } from '../consume/confluent/index.ts';
import type { Coordination } from '../coordinate/cluster-port.ts';
import { clusterKeyPrefix, redisCoordination } from '../coordinate/redis/index.ts';
import type { RestListeners } from '../rest/listeners.ts';
import { Cluster } from '../runtime/cluster/cluster.ts';
import { ConfigTopicStore } from '../runtime/cluster/config-store.ts';
import { KafkaStateLog } from '../runtime/cluster/state-log.ts';
import type { LoggersPort, StandaloneHerder } from '../runtime/herder.ts';
import { LoggerLevels } from '../runtime/loggers.ts';
import type { OpenCommitter, StandaloneWorker } from '../runtime/worker.ts';

/** The pieces of a cluster worker (distributed mode) that the composition needs. */
export interface ClusterParts {
  readonly configs: ConfigTopicStore;
  readonly view: Cluster;
  /** A task here announced a cycle of a connector whose committer runs elsewhere: a wake-up job. */
  wake(connector: string): void;
  /** The worker holding the connector's committer lease, or null; rejects when Redis cannot be asked (or before join). */
  committerHolder(connector: string): Promise<string | null>;
  /** Takes the connector's committer lease (null: held elsewhere), then opens the committer under it. */
  seatCommitter(c: ConnectorConfig, open: (beforeCommit: () => Promise<void>) => Promise<OpenCommitter>): Promise<OpenCommitter | null>;
  /** Joins the cluster as the worker behind `rest`: membership, the config and status topics. */
  join(rest: RestListeners, herder: StandaloneHerder, sw: StandaloneWorker): Promise<void>;
  /** Leaves the cluster (after the herder stopped everything): a last status report, deregistration. */
  close(): Promise<void>;
}

export async function clusterParts(worker: WorkerConfig, settings: { readonly admin: ClientSettings; readonly producer: ClientSettings; readonly reader: ClientSettings }, log: Logger): Promise<ClusterParts> {
  const c = worker.cluster as ClusterSettings;
  const admin = await ConfluentKafkaAdmin.connect({ settings: settings.admin });
  await admin.checkReachable();
  const producer = await ConfluentRecordProducer.connect({ settings: settings.producer, clientId: `${c.groupId}-state` });
  const readerSettings = settings.reader;
  const configReader = await ConfluentControlTopicReader.connect({ settings: readerSettings });
  const statusReader = await ConfluentControlTopicReader.connect({ settings: readerSettings });
  const stateLog = { admin, producer, log: log.child({ component: 'cluster' }) };
  const configLog = new KafkaStateLog({ ...stateLog, topic: c.configTopic.name, setting: 'config.storage.topic', purpose: 'connector configurations', partitions: 1, singlePartition: true, replicationFactor: c.configTopic.replicationFactor, reader: configReader });
  const statusLog = new KafkaStateLog({ ...stateLog, topic: c.statusTopic.name, setting: 'status.storage.topic', purpose: 'connector and task statuses', partitions: c.statusTopic.partitions, replicationFactor: c.statusTopic.replicationFactor, reader: statusReader });
  const configs = new ConfigTopicStore(configLog, log);
  let sw: StandaloneWorker | undefined;
  let coordination: Coordination | undefined;
  // Join grace: two heartbeats after a change. A worker that registered within one heartbeat of this one is
  // in its view after this worker's next poll; two leave a poll's latency to spare (Redis slow, a busy
  // machine). After this worker's start, the session time-out: workers started together come up over
  // seconds (process start, clients, the config topic), and one not registered yet is in no view.
  const joinGraceMs = 2 * c.heartbeatMs;
  const view = new Cluster({ configs, statusLog, sessionTimeoutMs: c.sessionTimeoutMs, joinGraceMs, startGraceMs: Math.max(joinGraceMs, c.sessionTimeoutMs), log, currentShare: (name) => sw?.share(name) });
  return {
    configs,
    view,
    wake: (name) => void coordination?.wakeups.wake(name).catch(() => undefined),
    committerHolder: (name) => coordination?.leases.holder(`committer:${name}`) ?? Promise.reject(new Error('not joined to the cluster yet')),
    async seatCommitter(connector, open) {
      const lease = await coordination?.leases.tryAcquire(`committer:${connector.name}`);
      if (lease === undefined || lease === null) return null;
      let opened: OpenCommitter;
      try {
        opened = await open(() => lease.check());
      } catch (e) {
        await lease.release().catch(() => undefined);
        throw e;
      }
      const wakeups = await coordination?.wakeups.listen(connector.name, () => sw?.wakeCommitter(connector.name)).catch((e: unknown) => {
        log.warn('commit wake-ups unavailable; the committer runs at its interval', { connector: connector.name, error: errorMessage(e) });
        return undefined;
      });
      log.info('committer seated: this worker holds the connector\'s committer lease', { connector: connector.name });
      return {
        committer: opened.committer,
        onLost: (listener) => lease.onLost(listener),
        async close() {
          await bounded(wakeups?.close(), REDIS_STEP_MS);
          await opened.close();
          await bounded(lease.release(), REDIS_STEP_MS);
        },
      };
    },
    async join(rest, herder, worker_) {
      sw = worker_;
      coordination = redisCoordination({
        redisUrl: c.redisUrl.reveal(),
        keyPrefix: clusterKeyPrefix(c.groupId),
        workerId: rest.workerId,
        restUrl: rest.urls[0] ?? `http://${rest.workerId}`,
        heartbeatMs: c.heartbeatMs,
        sessionTimeoutMs: c.sessionTimeoutMs,
        leaseTtlMs: c.leaseTtlMs,
        log,
      });
      await coordination.membership.join();
      await configs.start();
      await view.start({ workerId: rest.workerId, membership: coordination.membership, reports: () => herder.localReports() });
      log.info('joined the cluster', { group: c.groupId, workerId: rest.workerId, workers: view.workers() });
    },
    async close() {
      // Each step bounded: a Redis or Kafka that does not answer must not keep a stopping worker alive (the
      // others drop it after the session time-out anyway; its last status report is a courtesy).
      await bounded(view.stop(), KAFKA_STEP_MS);
      await bounded(coordination?.membership.leave(), REDIS_STEP_MS);
      await bounded(coordination?.close(), REDIS_STEP_MS);
      await configLog.close().catch(() => undefined);
      await statusLog.close().catch(() => undefined);
      await producer.close().catch(() => undefined);
      await configReader.close().catch(() => undefined);
      await statusReader.close().catch(() => undefined);
      await admin.close().catch(() => undefined);
    },
  };
}

const REDIS_STEP_MS = 3_000;
const KAFKA_STEP_MS = 10_000;

/** Waits for `p` (errors ignored) at most `ms`. */
async function bounded(p: Promise<unknown> | undefined, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.resolve(p).catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** A cluster's workers share each table: a SQLite catalog is one process's file, so it is refused there. */
export function sharedCatalogOnly(c: ConnectorConfig): void {
  if (c.catalog.type === 'sql' && /sqlite:/i.test(c.catalog.uri)) {
    throw new RequestRefused('bad-request', `Connector configuration is invalid and contains the following 1 error(s):\nA SQLite catalog (${c.catalog.fromWorker ? 'the worker\'s icefloe.catalog' : 'iceberg.catalog.uri'}) is a file of one process; the workers of a cluster need a shared catalog: a REST catalog or jdbc:postgresql://...\nYou can also find the above list of errors at the endpoint \`/connector-plugins/{connectorType}/config/validate\``);
  }
}

/**
 * Log levels in a cluster: `scope=cluster` is a record of the config topic that every worker applies as it
 * reads it (Connect's `logger-cluster-<namespace>`), this one too; `scope=worker` stays on this worker.
 */
export function clusterLoggers(levels: LoggerLevels, cluster: ClusterParts, log: Logger): LoggersPort {
  cluster.configs.onLoggerLevel((namespace, level) => {
    try {
      levels.setLevel(namespace, level, 'cluster');
    } catch (e) {
      log.warn('a cluster log level from the config topic could not be applied', { namespace, level, error: errorMessage(e) });
    }
  });
  return {
    loggers: () => levels.loggers(),
    logger: (name) => levels.logger(name),
    setLevel(name, level, scope) {
      if (scope === 'worker') return levels.setLevel(name, level, scope);
      LoggerLevels.checkLevel(level); // refused as on one worker, before anything is stored
      void cluster.configs.setClusterLevel(name, level).catch((e: unknown) => log.warn('the cluster log level could not be stored', { namespace: name, level, error: errorMessage(e) }));
      return [];
    },
  };
}
