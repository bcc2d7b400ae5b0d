/**
 * `icefloe produce` over the ports: checks and encodes every record first (encode.ts), then makes sure the
 * topic exists (creating it when missing, or failing at once, naming the topic and the brokers), registers
 * the schema as `<topic>-value` (TopicNameStrategy) and produces the records, Confluent-framed for Avro and
 * Protobuf. Producing to a topic that does not exist never waits: librdkafka would hold such records until
 * `message.timeout.ms` (5 minutes) while it waits for the topic's metadata.
 *
 * Owns: the order of the steps and the messages about them. Must not: know a Kafka client or a registry
 * library (index.ts wires the adapters).
 */
import { ConfigError, IcefloeError, RetriableError } from '../../src/core/errors.ts';
import type { DeliveredRecord, KafkaAdmin, OutgoingRecord, RecordProducer } from '../../src/consume/port.ts';
import { topicNameSubject } from '../../src/decode/registry-port.ts';
import type { SchemaRegistrar } from '../../src/decode/registry-port.ts';
import { avroType, confluentFrame, confluentProtobufFrame, encodeAvro, encodeProtobuf, keyFromField, parseDocument, protobufTarget } from './encode.ts';
import type { InputRecord } from './encode.ts';

export type ProduceFormat = 'json' | 'avro' | 'protobuf';

export interface ProduceRequest {
  readonly bootstrapServers: string;
  readonly topic: string;
  readonly format: ProduceFormat;
  readonly records: readonly InputRecord[];
  /** The Avro schema (JSON text) or the .proto file; required for avro and protobuf. */
  readonly schema?: string;
  /** Protobuf: the message to encode (default the file's first). */
  readonly message?: string;
  /** The key of every record (UTF-8). */
  readonly key?: string;
  /** The key of each record: this top-level field of its value. */
  readonly keyField?: string;
  /** One partition for every record (default: the key chooses). */
  readonly partition?: number;
  /** Partitions of the topic when it has to be created. */
  readonly partitions: number;
}

export interface ProduceResult {
  readonly records: number;
  /** Partitions the topic was created with; null when it existed. */
  readonly createdPartitions: number | null;
  readonly schemaId: number | null;
  readonly subject: string | null;
  /** Where the records landed: per partition, the first and last offset. */
  readonly ranges: readonly { readonly partition: number; readonly first: bigint; readonly last: bigint }[];
}

interface Prepared {
  readonly key: string | null;
  /** The value body; framed once the schema id is known. */
  readonly body: Uint8Array;
}

/** Checks and encodes every record (no I/O): a bad one fails the run before anything is created or sent. */
function prepare(req: ProduceRequest): { prepared: Prepared[]; frame: (id: number, body: Uint8Array) => Uint8Array; schemaType: 'AVRO' | 'PROTOBUF' | null } {
  let encode: (r: InputRecord, doc: unknown) => Uint8Array;
  let frame: (id: number, body: Uint8Array) => Uint8Array = (_id, body) => body;
  let schemaType: 'AVRO' | 'PROTOBUF' | null = null;
  if (req.format === 'avro') {
    const type = avroType(req.schema ?? '');
    encode = (r, doc) => encodeAvro(type, r, doc);
    frame = confluentFrame;
    schemaType = 'AVRO';
  } else if (req.format === 'protobuf') {
    const target = protobufTarget(req.schema ?? '', req.message);
    encode = (r, doc) => encodeProtobuf(target, r, doc);
    frame = (id, body) => confluentProtobufFrame(id, target.indexes, body);
    schemaType = 'PROTOBUF';
  } else {
    // JsonConverter with schemas.enable=false reads the text itself: it is sent as given, once it parses.
    encode = (r) => Buffer.from(r.text.trim(), 'utf8');
  }
  const prepared = req.records.map((r) => {
    const doc = parseDocument(r);
    const key = req.keyField !== undefined ? keyFromField(r, doc, req.keyField) : (req.key ?? null);
    return { key, body: encode(r, doc) };
  });
  return { prepared, frame, schemaType };
}

/** Creates the topic when it is missing; a failure names the topic and the brokers, and why. */
async function ensureTopic(admin: KafkaAdmin, req: ProduceRequest): Promise<number | null> {
  let created: boolean;
  try {
    created = await admin.ensureTopic({ name: req.topic, partitions: req.partitions, replicationFactor: -1 });
  } catch (e) {
    // The broker's refusal (an invalid name, a policy, no permission) is the user's to fix (exit 2); a
    // broker that cannot be reached or answers too late is the cluster's (exit 1).
    const why = e instanceof IcefloeError ? e.message : String(e);
    const Class = e instanceof RetriableError ? RetriableError : ConfigError;
    throw new Class(`could not find or create topic ${req.topic} on the Kafka cluster at ${req.bootstrapServers}: ${why}`, { cause: e });
  }
  if (req.partition !== undefined) {
    const n = await admin.partitionCount(req.topic);
    if (req.partition >= n) throw new ConfigError(`--partition ${req.partition}: topic ${req.topic} has ${n} partition${n === 1 ? '' : 's'} (0-${n - 1})`);
  }
  return created ? req.partitions : null;
}

function ranges(delivered: readonly DeliveredRecord[]): ProduceResult['ranges'] {
  const by = new Map<number, { partition: number; first: bigint; last: bigint }>();
  for (const d of delivered) {
    const r = by.get(d.partition);
    if (r === undefined) by.set(d.partition, { partition: d.partition, first: d.offset, last: d.offset });
    else {
      if (d.offset < r.first) r.first = d.offset;
      if (d.offset > r.last) r.last = d.offset;
    }
  }
  return [...by.values()].sort((a, b) => a.partition - b.partition);
}

export interface ProducePorts {
  readonly admin: KafkaAdmin;
  /** Opened only once the topic is there. */
  readonly producer: () => Promise<RecordProducer>;
  /** The registry, for avro and protobuf. */
  readonly registrar: () => SchemaRegistrar;
  readonly registryUrl: string;
}

export async function produceRecords(req: ProduceRequest, ports: ProducePorts): Promise<ProduceResult> {
  if (req.topic === '') throw new ConfigError('the topic may not be empty');
  const { prepared, frame, schemaType } = prepare(req);
  const createdPartitions = await ensureTopic(ports.admin, req);
  let schemaId: number | null = null;
  const subject = schemaType === null ? null : topicNameSubject(req.topic);
  if (schemaType !== null && subject !== null) {
    try {
      schemaId = await ports.registrar().register(subject, { type: schemaType, schema: req.schema ?? '' });
    } catch (e) {
      const why = e instanceof IcefloeError ? e.message : String(e);
      const Class = e instanceof ConfigError ? ConfigError : RetriableError;
      throw new Class(`registering the schema as ${subject} at ${ports.registryUrl} failed: ${why}`, { cause: e });
    }
  }
  const id = schemaId;
  const records: OutgoingRecord[] = prepared.map((p) => ({
    topic: req.topic,
    partition: req.partition ?? null,
    key: p.key,
    value: id === null ? p.body : frame(id, p.body),
  }));
  const producer = await ports.producer();
  const delivered = await producer.send(records);
  return { records: delivered.length, createdPartitions, schemaId, subject, ranges: ranges(delivered) };
}
