/**
 * `ControlTopicReader` over the in-memory Kafka: read_committed, auto.offset.reset=error. Like the
 * confluent reader, a read first checks every start position against its log (past the high watermark is
 * a `FatalError`: the topic was recreated; below the log start a `RetriableError`: retention deleted
 * records since the caller looked, so it looks again), then
 * returns every committed record from each position up to the partition's last stable offset as of the
 * call, and reports where it stopped: the LSO, or just past the last record when `maxRecords` or
 * `maxBytes` ran out.
 *
 * Owns: one reader. Must not: remember positions between reads.
 */
import { FatalError, RetriableError } from '../../core/errors.ts';
import { partitionKey } from '../port.ts';
import type { ControlRead, ControlReadOptions, ControlTopicReader, RawRecord, TopicPartitionOffset } from '../port.ts';
import { stateError } from './broker.ts';
import type { Broker } from './broker.ts';
import { rejectCall } from './faults.ts';
import type { Fault, ReaderOperation } from './faults.ts';
import type { PartitionLog } from './log.ts';

export class MemoryControlTopicReader implements ControlTopicReader {
  /** Names the client for fault injection. */
  readonly name: string;
  readonly #broker: Broker;
  #closed = false;

  constructor(broker: Broker, name: string) {
    this.#broker = broker;
    this.name = name;
  }

  failNext(operation: ReaderOperation, fault: Fault | Error): void {
    this.#broker.faults.add(this.name, operation, fault instanceof Error ? rejectCall(fault) : fault);
  }

  read(from: readonly TopicPartitionOffset[], options: ControlReadOptions = {}): Promise<ControlRead> {
    return this.#broker.faults.around(this.name, 'read', () => {
      if (this.#closed) throw stateError('read-control', 'the reader is closed');
      const logs = from.map((p) => this.#checked(p));
      let budget = options.maxRecords ?? Number.POSITIVE_INFINITY;
      let bytesLeft = options.maxBytes ?? Number.POSITIVE_INFINITY;
      const records: RawRecord[] = [];
      const endOffsets = from.map((p, i) => {
        const log = logs[i] as PartitionLog;
        if (budget <= 0 || bytesLeft <= 0 || p.offset >= log.lastStable) return { topic: p.topic, partition: p.partition, offset: p.offset };
        const got = log.readCommitted(p.offset, budget);
        // The byte bound cuts after the record that crosses it; the next read starts just past that record.
        let next = got.next;
        for (const r of got.records) {
          records.push(r);
          budget -= 1;
          bytesLeft -= (r.key?.byteLength ?? 0) + (r.value?.byteLength ?? 0);
          if (bytesLeft <= 0) {
            next = r.offset + 1n;
            break;
          }
        }
        return { topic: p.topic, partition: p.partition, offset: next };
      });
      return { records, endOffsets };
    });
  }

  close(): Promise<void> {
    return this.#broker.faults.around(this.name, 'close', () => {
      this.#closed = true;
    });
  }

  #checked(p: TopicPartitionOffset): PartitionLog {
    const key = partitionKey(p);
    const log = this.#broker.partitionLog(p);
    if (log === undefined) throw new RetriableError(`Kafka read-control: no offsets for ${key}`, { context: { operation: 'read-control', partition: key } });
    const context = { partition: key, position: String(p.offset), logStart: String(log.logStart), highWatermark: String(log.high) };
    if (p.offset > log.high) throw new FatalError(`control topic position ${key}@${p.offset} is outside the log [${log.logStart}, ${log.high}]: the topic was recreated`, { context });
    if (p.offset < log.logStart) throw new RetriableError(`control topic position ${key}@${p.offset} is below the log start ${log.logStart}: retention deleted records since the read began; reading again`, { context });
    return log;
  }
}
