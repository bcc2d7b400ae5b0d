/**
 * The Kafka topics a connector needs before its tasks start: the control topic (created with safe
 * settings when allowed, then checked) and the dead-letter topic (created when missing). A composition
 * part of app.ts: only app.ts imports it.
 */
import { IcefloeError } from '../core/errors.ts';
import type { Logger } from '../core/log.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import type { KafkaAdmin } from '../consume/port.ts';
import { checkControlTopicConfig } from '../coordinate/connector-health.ts';

/**
 * Creates the control topic with safe settings when missing (and allowed), then reads its configuration
 * and refuses an unsafe one (coordinate/connector-health.ts); returns its retention.ms (null: unlimited).
 */
export async function prepareControlTopic(admin: KafkaAdmin, c: ConnectorConfig, log: Logger): Promise<number | null> {
  const control = c.control;
  if (control.autoCreateTopic) {
    const created = await admin.ensureTopic({
      name: control.topic,
      partitions: control.topicPartitions,
      replicationFactor: control.topicReplicationFactor,
      configs: { 'retention.ms': String(control.topicRetentionMs), 'retention.bytes': '-1', 'cleanup.policy': 'delete' },
    });
    if (created) log.info('control topic created', { topic: control.topic, retentionMs: control.topicRetentionMs });
  }
  if (!control.checkTopicConfig) {
    log.warn('the control topic configuration is not checked (icefloe.control.topic.check-config=false); retention alarms assume icefloe.control.topic.retention-ms', { topic: control.topic });
    return control.topicRetentionMs < 0 ? null : control.topicRetentionMs;
  }
  // ensureTopic made sure it exists (this call or another's created it): an unknown topic is metadata lag.
  const retentionMs = checkControlTopicConfig(control.topic, await topicConfigsOf(admin, control.topic, control.autoCreateTopic), control);
  log.info('control topic checked', { topic: control.topic, retentionMs });
  return retentionMs;
}

/**
 * Creates the dead-letter topic when missing, as Connect does when a task starts: one partition, the
 * configured replication factor. A topic that exists is used as it is.
 */
export async function prepareDeadLetterTopic(admin: KafkaAdmin, c: ConnectorConfig, log: Logger): Promise<void> {
  const dlq = c.errors.deadLetterTopic;
  if (dlq === null || c.errors.tolerance !== 'all') return;
  const created = await admin.ensureTopic({ name: dlq.topic, partitions: 1, replicationFactor: dlq.replicationFactor });
  if (created) log.info('dead-letter topic created', { topic: dlq.topic, replicationFactor: dlq.replicationFactor });
}

/**
 * The topic's configuration; a topic just created may not be known to the broker that answers
 * DescribeConfigs for a moment (metadata propagation): when it must exist, asked again for up to 10 s.
 */
async function topicConfigsOf(admin: KafkaAdmin, topic: string, mustExist: boolean): Promise<Readonly<Record<string, string>>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return await admin.topicConfigs(topic);
    } catch (e) {
      const unknown = e instanceof IcefloeError && e.context['unknownTopic'] === true;
      if (!mustExist || !unknown || Date.now() > deadline) throw e;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
