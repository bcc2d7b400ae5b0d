/**
 * The two sides of the REST conformance suite (test/e2e/rest-conformance.test.ts): the stack's reference
 * Kafka Connect worker running the file sink, and an Icefloe standalone worker serving the API and
 * running our Iceberg sink on the stack's catalog and S3. Each gives the suite a valid config, an invalid one (the same framework key broken on both: `tasks.max`), a logger and a way to wait until a
 * connector's consumer group is empty.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { KafkaJS } from '@confluentinc/kafka-javascript';
import { poll } from './connect-conformance.ts';
import type { Side } from './connect-conformance.ts';
import { SCHEMALESS_JSON, sinkConnector } from './sink-e2e.ts';
import { connectWorkerUrl } from './stack.ts';

export const FILE_SINK = 'org.apache.kafka.connect.file.FileStreamSinkConnector';
export const ICEBERG_SINK = 'org.apache.iceberg.connect.IcebergSinkConnector';

/** Resolves once the sink group `connect-<connector>` has no members (Connect's sink group name). */
function groupEmpty(admin: KafkaJS.Admin): (connector: string) => Promise<void> {
  return async (connector) => {
    await poll(`consumer group connect-${connector} without members`, async () => {
      const { groups } = await admin.describeGroups([`connect-${connector}`]);
      return groups.every((g) => g.members.length === 0) ? true : undefined;
    });
  };
}

/** The reference side: Connect's file sink, writing into `dir` (a directory the test owns). */
export function connectSide(admin: KafkaJS.Admin, dir: string): Side {
  const base = (topic: string): Record<string, string> => ({ 'connector.class': FILE_SINK, 'tasks.max': '1', topics: topic, file: join(dir, 'sink.txt') });
  return {
    label: 'connect',
    baseUrl: connectWorkerUrl(),
    connectorClass: FILE_SINK,
    validConfig: base,
    invalidConfig: (topic) => ({ ...base(topic), 'tasks.max': 'many' }),
    // A class logger that exists from the start; the sequence never sets it or a parent of it.
    logger: 'org.apache.kafka.connect.runtime.Worker',
    awaitGroupEmpty: groupEmpty(admin),
  };
}

export interface IcefloeSideOptions {
  readonly baseUrl: string;
  readonly admin: KafkaJS.Admin;
  /** The Iceberg namespace of the run: each connector writes its own table there. */
  readonly namespace: string;
  /** The run's control topic prefix: each connector has its own control topic. */
  readonly controlPrefix: string;
  readonly logger: string;
  /** Told every table and control topic a config names, for the test to drop them afterwards. */
  readonly onResource: (kind: 'table' | 'topic', name: string) => void;
}

/**
 * Icefloe: our Iceberg sink on the stack's REST catalog and S3, schemaless JSON records. Each connector
 * gets its own table and control topic: connectors sharing them would wait on each other's commits (a
 * stopped connector's offsets cannot move while its control topic holds announcements it has not applied).
 */
export function icefloeSide(o: IcefloeSideOptions): Side {
  const base = (topic: string, connector: string): Record<string, string> => {
    const id = createHash('sha256').update(connector).digest('hex').slice(0, 12);
    const table = `${o.namespace}.t_${id}`;
    const controlTopic = `${o.controlPrefix}-${id}`;
    o.onResource('table', table);
    o.onResource('topic', controlTopic);
    return sinkConnector({
      name: connector,
      topics: topic,
      controlTopic,
      config: { ...SCHEMALESS_JSON, 'iceberg.tables': table, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.control.commit.interval-ms': '1000' },
    }).config;
  };
  return {
    label: 'icefloe',
    baseUrl: o.baseUrl,
    connectorClass: ICEBERG_SINK,
    validConfig: base,
    invalidConfig: (topic, connector) => ({ ...base(topic, connector), 'tasks.max': 'many' }),
    logger: o.logger,
    awaitGroupEmpty: groupEmpty(o.admin),
  };
}
