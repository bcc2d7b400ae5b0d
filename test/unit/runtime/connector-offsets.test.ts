/**
 * The PATCH body of `/connectors/{name}/offsets` as Connect validates it (ConnectorsResource and
 * SinkUtils.parseSinkConnectorOffsets in apache/kafka): every refusal with Connect's message, numbers given
 * as JSON numbers or decimal text, null (or no) offset as a reset, the last entry for a partition winning.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RequestRefused } from '../../../src/core/errors.ts';
import { EMPTY_ALTER_MESSAGE, offsetsRequireStoppedMessage, parseSinkOffsets } from '../../../src/runtime/connector-offsets.ts';

function refusedWith(body: unknown, message: string): void {
  assert.throws(
    () => parseSinkOffsets(body),
    (e: unknown) => e instanceof RequestRefused && e.refusal === 'bad-request' && e.message === message,
    `${JSON.stringify(body)} → ${message}`,
  );
}

const entry = (partition: unknown, offset?: unknown): Record<string, unknown> => (offset === undefined ? { partition } : { partition, offset });

test('an empty or missing offsets list is refused with Connect\'s message', () => {
  for (const body of [{}, { offsets: [] }, { offsets: null }, null, 'x']) refusedWith(body, EMPTY_ALTER_MESSAGE);
});

test('partition maps: null, missing keys, null topic, null or non-integer partition — each with Connect\'s text', () => {
  refusedWith({ offsets: [entry(null, { kafka_offset: 1 })] }, 'The partition for a sink connector offset cannot be null or missing');
  refusedWith({ offsets: [{ offset: { kafka_offset: 1 } }] }, 'The partition for a sink connector offset cannot be null or missing');
  refusedWith({ offsets: [entry({ kafka_topic: 't' }, { kafka_offset: 1 })] }, "The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'");
  refusedWith({ offsets: [entry({ kafka_topic: null, kafka_partition: 0 })] }, 'Kafka topic names must be valid strings and may not be null');
  refusedWith({ offsets: [entry({ kafka_topic: 't', kafka_partition: null })] }, 'Kafka partitions must be valid numbers and may not be null');
  for (const bad of ['a', '1.5', 1.5, true, '', ' 1', 2 ** 31]) {
    refusedWith({ offsets: [entry({ kafka_topic: 't', kafka_partition: bad }, { kafka_offset: 1 })] }, `Failed to parse the following Kafka partition value in the provided offsets: '${String(bad)}'. Partition values for sink connectors need to be integers.`);
  }
});

test('offset maps: without kafka_offset, or a value that is no long, are refused with Connect\'s text', () => {
  refusedWith({ offsets: [entry({ kafka_topic: 't', kafka_partition: 0 }, { offset: 5 })] }, "The offset for a sink connector should either be null or contain the key 'kafka_offset'");
  for (const bad of ['ten', 1.25, null, '9223372036854775808']) {
    refusedWith({ offsets: [entry({ kafka_topic: 't', kafka_partition: 0 }, { kafka_offset: bad })] }, `Failed to parse the following Kafka offset value in the provided offsets: '${String(bad)}'. Offset values for sink connectors need to be integers.`);
  }
});

test('numbers as JSON numbers or decimal text; a null or absent offset resets; the last entry of a partition wins', () => {
  const got = parseSinkOffsets({
    offsets: [
      entry({ kafka_topic: 'a', kafka_partition: 0 }, { kafka_offset: 10 }),
      entry({ kafka_topic: 'a', kafka_partition: '1' }, { kafka_offset: '9007199254740993' }),
      entry({ kafka_topic: 'b', kafka_partition: 0 }, null),
      entry({ kafka_topic: 'b', kafka_partition: 1 }),
      entry({ kafka_topic: 'a', kafka_partition: 0 }, { kafka_offset: '12' }),
    ],
  });
  assert.deepEqual(got, [
    { topic: 'a', partition: 0, offset: 12n },
    { topic: 'a', partition: 1, offset: 9007199254740993n },
    { topic: 'b', partition: 0, offset: null },
    { topic: 'b', partition: 1, offset: null },
  ]);
});

test('the STOPPED-state message is Connect\'s, naming the connector', () => {
  assert.equal(
    offsetsRequireStoppedMessage('orders'),
    "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/orders/stop' endpoint",
  );
});
