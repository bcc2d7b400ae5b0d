/**
 * `RecordProducer` over librdkafka's idempotent Producer: no transactions, every record confirmed by a
 * delivery report that says where it landed. For tools (the data generator); the sink's own writes go
 * through ConfluentTransactionalProducer.
 *
 * Throughput: `send` hands the whole batch to librdkafka without waiting per record (librdkafka batches
 * by partition and `linger.ms`), and several sends may be in flight at once. Delivery reports come from
 * librdkafka's background thread (`setPollInBackground`), so no JS timer polls for them; each record's
 * report carries a small opaque slot naming its batch and position, the same pattern as the client's own
 * KafkaJS layer. A full local queue (ERR__QUEUE_FULL) waits for reports to drain it, bounded in time.
 *
 * Owns: the delivery bookkeeping and the translation of the client's errors (errors.ts); its settings are
 * in record-producer-settings.ts. Must not: retry a failed delivery (librdkafka already retried within
 * `delivery.timeout.ms`; resending could duplicate what the caller must decide about).
 */
import { RetriableError } from '../../core/errors.ts';
import type { DeliveredRecord, OutgoingRecord, RecordProducer } from '../port.ts';
import { KAFKA_CODES, translateKafkaError } from './errors.ts';
import { Reachability } from './reachability.ts';
import { RdKafka, call, headerValue, sync } from './internal.ts';
import type { ProducerClient } from './internal.ts';
import { recordProducerConfig } from './record-producer-settings.ts';
import { offsetFromNumber, splitTopicConfig } from './settings.ts';
import type { ClientSettings } from './settings.ts';

export interface RecordProducerOptions {
  readonly settings: ClientSettings;
  /** Overrides (producer.override.*, prefix stripped). */
  readonly overrides?: ClientSettings;
  readonly clientId?: string;
  /** How long `send` waits for room in a full local queue before failing (default 60 s). */
  readonly queueFullTimeoutMs?: number;
}

/**
 * A key or value as the binding takes it, without a per-record wrapper: it copies the bytes of any
 * Uint8Array (node::Buffer::HasInstance accepts every ArrayBufferView; RK_MSG_COPY) and encodes a string
 * key as UTF-8 itself. Its typings say Buffer, hence the cast.
 */
function payload(v: Uint8Array | string | null | undefined): Buffer | null {
  if (v === undefined || v === null) return null;
  return v as Buffer;
}

/** One `send` call: its results by position, and how many of its records are still unreported. */
class Batch {
  readonly delivered: (DeliveredRecord | undefined)[];
  /** Records handed to librdkafka and not yet reported. */
  pending = 0;
  /** All records of the call were handed over (or producing stopped); settle when `pending` reaches 0. */
  sealed = false;
  error: unknown = undefined;
  readonly resolve: (records: DeliveredRecord[]) => void;
  readonly reject: (error: unknown) => void;

  constructor(size: number, resolve: (records: DeliveredRecord[]) => void, reject: (error: unknown) => void) {
    this.delivered = new Array<DeliveredRecord | undefined>(size);
    this.resolve = resolve;
    this.reject = reject;
  }

  settleIfDone(): void {
    if (!this.sealed || this.pending > 0) return;
    if (this.error !== undefined) this.reject(translateKafkaError(this.error, 'send'));
    else this.resolve(this.delivered as DeliveredRecord[]);
  }
}

/** The opaque of one record's delivery report. */
interface Slot {
  readonly batch: Batch;
  readonly index: number;
}

export class ConfluentRecordProducer implements RecordProducer {
  readonly #producer: ProducerClient;
  readonly #queueFullTimeoutMs: number;

  private constructor(producer: ProducerClient, queueFullTimeoutMs: number) {
    this.#producer = producer;
    this.#queueFullTimeoutMs = queueFullTimeoutMs;
  }

  static async connect(options: RecordProducerOptions): Promise<ConfluentRecordProducer> {
    const config = recordProducerConfig(options.settings, options.overrides);
    if (options.clientId !== undefined) config['client.id'] = options.clientId;
    const { global, topic } = splitTopicConfig(config);
    // dr_cb is the binding's switch for delivery reports (a JS-side option, not a librdkafka property).
    const producer = sync('connect', () => new RdKafka.Producer({ ...global, dr_cb: true }, topic));
    producer.on('delivery-report', (err, report) => {
      const slot = report.opaque as Slot | undefined;
      if (slot === undefined) return;
      const batch = slot.batch;
      if (err !== null && err !== undefined) {
        batch.error ??= err;
      } else {
        const offset = offsetFromNumber(report.offset);
        if (offset === null) batch.error ??= new RetriableError(`Kafka send: the delivery report for ${report.topic}[${report.partition}] carries no offset`);
        else batch.delivered[slot.index] = { topic: report.topic, partition: report.partition, offset };
      }
      batch.pending--;
      batch.settleIfDone();
    });
    const reach = new Reachability(config).watch(producer);
    await call<unknown>('connect', (cb) => producer.connect({ timeout: 10_000 }, cb)).catch((e: unknown) => {
      throw reach.explain(e);
    });
    // Delivery reports and errors are served on librdkafka's thread, without a JS timer.
    producer.setPollInBackground(true);
    return new ConfluentRecordProducer(producer, options.queueFullTimeoutMs ?? 60_000);
  }

  send(records: readonly OutgoingRecord[]): Promise<DeliveredRecord[]> {
    return new Promise<DeliveredRecord[]>((resolve, reject) => {
      const batch = new Batch(records.length, resolve, reject);
      this.produceAll(records, batch).then(
        () => {
          batch.sealed = true;
          batch.settleIfDone();
        },
        (e: unknown) => {
          // Stop producing; the records already handed over still report, and the batch settles after them.
          batch.error ??= e;
          batch.sealed = true;
          batch.settleIfDone();
        },
      );
    });
  }

  private async produceAll(records: readonly OutgoingRecord[], batch: Batch): Promise<void> {
    for (let i = 0; i < records.length; i++) {
      const r = records[i] as OutgoingRecord;
      const value = payload(r.value);
      const key = payload(r.key);
      const headers = r.headers?.map((h) => ({ [h.key]: headerValue(h.value) }));
      const slot: Slot = { batch, index: i };
      let waitedSince: number | undefined;
      for (;;) {
        try {
          this.#producer.produce(r.topic, r.partition ?? null, value, key, r.timestamp ?? null, slot, headers);
          batch.pending++;
          break;
        } catch (e) {
          if ((e as { code?: unknown }).code !== KAFKA_CODES.ERR__QUEUE_FULL) throw translateKafkaError(e, 'send');
          // The local queue is full: wait for delivery reports to drain it (they arrive on the event loop).
          waitedSince ??= Date.now();
          if (Date.now() - waitedSince > this.#queueFullTimeoutMs) throw translateKafkaError(e, 'send');
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
    }
  }

  async flush(timeoutMs = 30_000): Promise<void> {
    await call('send', (cb) => this.#producer.flush(timeoutMs, cb));
  }

  async close(): Promise<void> {
    // Flush while delivery reports are still served, so every pending send settles before the client goes.
    try {
      await this.flush();
    } finally {
      this.#producer.setPollInBackground(false);
      await call<unknown>('close', (cb) => this.#producer.disconnect(5_000, cb));
    }
  }
}
