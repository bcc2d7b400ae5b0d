/**
 * The two sides of the REST conformance suite (test/e2e/rest-conformance.test.ts): the stack's reference
 * Kafka Connect worker running the file sink, and an Icefloe standalone worker serving the API on a free
 * port and running our Iceberg sink on the stack's catalog and S3. Each gives the suite a valid config, an
 * invalid one (the same framework key broken on both: `tasks.max`), a logger and a way to wait until a
 * connector's consumer group is empty.
 */
import { join } from 'node:path';
import { createServer } from 'node:net';
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
  /** The Iceberg table every connector of the run writes (`namespace.table`). */
  readonly table: string;
  /** The control topic the connectors share. */
  readonly controlTopic: string;
  readonly logger: string;
}

/** Icefloe: our Iceberg sink on the stack's REST catalog and S3, schemaless JSON records. */
export function icefloeSide(o: IcefloeSideOptions): Side {
  const base = (topic: string): Record<string, string> =>
    sinkConnector({
      name: 'unused',
      topics: topic,
      controlTopic: o.controlTopic,
      config: { ...SCHEMALESS_JSON, 'iceberg.tables': o.table, 'iceberg.tables.auto-create-enabled': 'true', 'iceberg.control.commit.interval-ms': '1000' },
    }).config;
  return {
    label: 'icefloe',
    baseUrl: o.baseUrl,
    connectorClass: ICEBERG_SINK,
    validConfig: base,
    invalidConfig: (topic) => ({ ...base(topic), 'tasks.max': 'many' }),
    logger: o.logger,
    awaitGroupEmpty: groupEmpty(o.admin),
  };
}

/** A TCP port nothing listens on right now (the OS picks it), for a worker's `listeners`. */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
