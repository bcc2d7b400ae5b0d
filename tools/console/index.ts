/**
 * The console tool's composition (`icefloe produce`, `icefloe consume`): builds the Kafka admin client,
 * the record producer, the read_committed reader and the schema registry client over the worker's own
 * adapters, hands them to produce.ts / consume.ts, and closes them afterwards.
 *
 * A tool, not part of the worker: only the CLI (src/cli/console.ts) loads it, for these two commands
 * (.dependency-cruiser.cjs enforces it), and the worker image does not ship tools/.
 *
 * Owns: adapter construction and lifetimes. Must not: read process.env or argv (the CLI passes plain
 * options in), or print (the CLI does; `consume` hands each line to its `write`).
 */
import { ConfluentControlTopicReader, ConfluentKafkaAdmin, ConfluentRecordProducer } from '../../src/consume/confluent/index.ts';
import type { ClientSettings } from '../../src/consume/confluent/index.ts';
import { ConfluentSchemaResolver, registryOptionsFromConverterProps } from '../../src/decode/registry/schema-registry.ts';
import { consumeRecords } from './consume.ts';
import type { ConsumeRequest, ConsumeResult } from './consume.ts';
import { RecordPrinter } from './decode.ts';
import { produceRecords } from './produce.ts';
import type { ProduceFormat, ProduceRequest, ProduceResult } from './produce.ts';

export type { ConsumeResult, ProduceFormat, ProduceResult };
export type { InputRecord } from './encode.ts';

export interface RunProduceOptions extends ProduceRequest {
  readonly registryUrl: string;
}

export interface RunConsumeOptions extends ConsumeRequest {
  readonly registryUrl: string;
  /** Receives each record's JSON line. */
  readonly write: (line: string) => void;
}

/** librdkafka settings of the tool's clients. */
function settings(bootstrapServers: string): ClientSettings {
  return { 'bootstrap.servers': bootstrapServers };
}

function registry(url: string): ConfluentSchemaResolver {
  // Unknown ids are not waited for: a console read shows what the registry knows now.
  return new ConfluentSchemaResolver({ ...registryOptionsFromConverterProps({ 'schema.registry.url': url }, ''), unknownIdGraceMs: 0 });
}

export async function runProduce(options: RunProduceOptions): Promise<ProduceResult> {
  const admin = await ConfluentKafkaAdmin.connect({ settings: settings(options.bootstrapServers) });
  let producer: ConfluentRecordProducer | undefined;
  try {
    return await produceRecords(options, {
      admin,
      registryUrl: options.registryUrl,
      registrar: () => registry(options.registryUrl),
      producer: async () => {
        // A delivery that cannot complete fails within 30 s instead of librdkafka's 5 minutes, so the command
        // never appears to hang (the topic exists by then: only an unreachable or failing broker gets here).
        producer = await ConfluentRecordProducer.connect({ settings: settings(options.bootstrapServers), overrides: { 'message.timeout.ms': '30000' }, clientId: 'icefloe-produce' });
        return producer;
      },
    });
  } finally {
    await producer?.close();
    await admin.close();
  }
}

export async function runConsume(options: RunConsumeOptions): Promise<ConsumeResult> {
  const admin = await ConfluentKafkaAdmin.connect({ settings: settings(options.bootstrapServers) });
  try {
    const reader = await ConfluentControlTopicReader.connect({ settings: settings(options.bootstrapServers) });
    try {
      const printer = new RecordPrinter(registry(options.registryUrl));
      return await consumeRecords(options, admin, reader, async (r) => options.write(await printer.line(r)));
    } finally {
      await reader.close();
    }
  } finally {
    await admin.close();
  }
}
