/**
 * Reading, seeding and committing the connector-level control position C (connector-position.ts) in its
 * consumer group, for the committer and for `icefloe positions`.
 *
 * Owns: the I/O around C. Must not: decide what C should be (the committer computes it, the rules live in
 * connector-position.ts) or lower it.
 */
import { ConfigError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { KafkaAdmin } from '../consume/port.ts';
import { encodePositionMetadata, readGroupPositions } from './connector-position.ts';
import type { ConnectorPositionEntry, ConnectorPositions } from './connector-position.ts';

export interface PositionStoreOptions {
  readonly admin: KafkaAdmin;
  readonly groupId: string;
  readonly topic: string;
  readonly controlTopicId: string;
  readonly log: Logger;
}

/** C as stored, or undefined when the group holds none for the live control topic. */
export async function readConnectorPositions(o: PositionStoreOptions): Promise<ConnectorPositions | undefined> {
  const read = readGroupPositions(await o.admin.groupOffsets(o.groupId, o.topic), o.controlTopicId);
  switch (read.kind) {
    case 'none':
      return undefined;
    case 'positions':
      return read.positions;
    case 'other-topic':
      o.log.warn('the connector position group holds offsets of an earlier control topic of this name; they are ignored', { group: o.groupId, topicIds: read.topicIds });
      return undefined;
    case 'foreign':
      throw new ConfigError(
        `consumer group ${o.groupId} has an offset on ${o.topic}[${read.partition}] that Icefloe did not commit (metadata ${JSON.stringify(read.metadata)}): ` +
          'it is the connector\'s control position and nobody else may commit to it; change iceberg.control.group-id-prefix or delete the group',
        { context: { group: o.groupId } },
      );
  }
}

/**
 * C as stored; when the group has none, seeds it (the connector's first committer start, or its offsets
 * expired) with each partition's log start, which never raises a table's own position.
 */
export async function loadOrSeedConnectorPositions(o: PositionStoreOptions, logStart: ReadonlyMap<number, bigint>): Promise<ConnectorPositions> {
  const stored = await readConnectorPositions(o);
  if (stored !== undefined) return stored;
  const seed = new Map<number, ConnectorPositionEntry>([...logStart].map(([p, low]) => [p, { offset: low, kind: 'seed' }]));
  const above = [...logStart].filter(([, low]) => low > 0n);
  if (above.length > 0) {
    o.log.warn('seeding the connector position at the control topic\'s log start: announcements before it are assumed not to be this connector\'s', {
      group: o.groupId,
      logStart: Object.fromEntries(above.map(([p, low]) => [p, low.toString()])),
    });
  } else {
    o.log.info('seeding the connector position', { group: o.groupId });
  }
  await commitConnectorPositions(o, seed);
  return seed;
}

export async function commitConnectorPositions(o: PositionStoreOptions, positions: ConnectorPositions): Promise<void> {
  await o.admin.commitGroupOffsets(
    o.groupId,
    [...positions].map(([partition, e]) => ({ topic: o.topic, partition, offset: e.offset, metadata: encodePositionMetadata(e.kind, o.controlTopicId, e.rest) })),
  );
}
