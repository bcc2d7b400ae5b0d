/**
 * The test-data generator's composition (`icefloe generate`, the quickstart, tests and benchmarks): builds
 * the Kafka admin client and producer over @confluentinc/kafka-javascript and the schema registry client,
 * hands them as ports to `generateOrders` (generator.ts), and closes them afterwards.
 *
 * A tool, not part of the worker: nothing under src/ imports tools/ except the CLI entry (src/cli.ts), which
 * loads this module only for the `generate` command (.dependency-cruiser.cjs enforces it), and the worker
 * image does not ship tools/ (Dockerfile). It reuses the worker's ports and adapters (src/core, src/consume,
 * src/decode) rather than copies of them.
 *
 * Owns: the generator's adapter construction and lifetimes, and the surface scripts load the generator
 * through (the benchmark imports only this module, so it keeps working when the modules behind it are
 * rearranged). Must not: read process.env or argv (the CLI passes plain options in), or hold generator
 * logic (generator.ts, orders.ts).
 */
import { ConfluentKafkaAdmin, ConfluentRecordProducer } from '../../src/consume/confluent/index.ts';
import type { ClientSettings } from '../../src/consume/confluent/index.ts';
import { ConfluentSchemaResolver, registryOptionsFromConverterProps } from '../../src/decode/registry/schema-registry.ts';
import { generateOrders } from './generator.ts';
import type { GenerateOrdersOptions, GenerateStats } from './generator.ts';
import { ORDER_FORMATS } from './orders.ts';
import type { OrderFormat, SchemaVersion } from './orders.ts';

export type { GenerateStats };
export type GenerateFormat = OrderFormat;
export const GENERATE_FORMATS: readonly GenerateFormat[] = ORDER_FORMATS;
export { OrderGenerator } from './orders.ts';
export { orderAvroSchema } from './order-schemas.ts';
export { orderEncoder } from './order-encodings.ts';

export interface RunGenerateOptions {
  readonly bootstrapServers: string;
  /** The Confluent-API base URL (Apicurio: `…/apis/ccompat/v7`); used by the avro and protobuf formats. */
  readonly registryUrl: string;
  readonly topic: string;
  /** Partitions to create the topic with when it is missing (an existing topic is left as it is). */
  readonly partitions: number;
  /** Produce only to these partitions (default: the key chooses). */
  readonly onlyPartitions?: readonly number[];
  readonly format: GenerateFormat;
  readonly count: number;
  /** Records per second; 0: as fast as possible. */
  readonly ratePerSec: number;
  readonly seed: number;
  readonly schemaVersion: SchemaVersion;
  /** Deterministic event times from here on (default: live, close to now). */
  readonly startTimeMs?: number;
  /** Extra librdkafka settings (security, tuning) for the admin client and the producer. */
  readonly kafkaSettings?: Readonly<Record<string, string>>;
  readonly onDelivered?: GenerateOrdersOptions['onDelivered'];
}

/** Creates the topic if needed, registers the schema, produces the events, and closes every client. */
export async function runGenerate(options: RunGenerateOptions): Promise<GenerateStats> {
  const settings: ClientSettings = { ...options.kafkaSettings, 'bootstrap.servers': options.bootstrapServers };
  const closers: (() => Promise<void>)[] = [];
  return using(closers, async () => {
    const admin = await ConfluentKafkaAdmin.connect({ settings });
    closers.push(() => admin.close());
    const producer = await ConfluentRecordProducer.connect({ settings, clientId: 'icefloe-generate' });
    closers.push(() => producer.close());
    // Only the framed formats register a schema; JSON runs need no registry (nor a valid URL for one).
    const framed = options.format === 'avro' || options.format === 'protobuf';
    return generateOrders({
      producer,
      ...(framed ? { registrar: schemaRegistry(options.registryUrl) } : {}),
      admin,
      topicPartitions: options.partitions,
      topic: options.topic,
      format: options.format,
      count: options.count,
      ratePerSec: options.ratePerSec,
      seed: options.seed,
      schemaVersion: options.schemaVersion,
      ...(options.onlyPartitions === undefined ? {} : { partitions: options.onlyPartitions }),
      ...(options.startTimeMs === undefined ? {} : { startTimeMs: options.startTimeMs }),
      ...(options.onDelivered === undefined ? {} : { onDelivered: options.onDelivered }),
    });
  });
}

/** The registry adapter for a URL (comma-separated for failover; user info is taken as basic auth). */
function schemaRegistry(url: string): ConfluentSchemaResolver {
  return new ConfluentSchemaResolver(registryOptionsFromConverterProps({ 'schema.registry.url': url }, ''));
}

/**
 * Runs `use`, then closes what it opened (it pushes a closer per client), last opened first, even when `use`
 * failed. `use`'s own error wins; otherwise the first failure to close is thrown.
 */
async function using<T>(closers: (() => Promise<void>)[], use: () => Promise<T>): Promise<T> {
  let result: { value: T } | undefined;
  let failure: { error: unknown } | undefined;
  try {
    result = { value: await use() };
  } catch (error) {
    failure = { error };
  }
  for (const close of closers.reverse()) {
    try {
      await close();
    } catch (error) {
      failure ??= { error };
    }
  }
  if (failure !== undefined) throw failure.error;
  return (result as { value: T }).value;
}
