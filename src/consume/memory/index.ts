/**
 * The in-memory Kafka: implements the ports of consume/port.ts for unit tests of the task and
 * committer loops (see cluster.ts). Pure code, no client library, no I/O.
 */
export { MemoryKafka } from './cluster.ts';
export type { GroupView, MemoryKafkaOptions, TestRecord } from './cluster.ts';
export { MemoryKafkaSource } from './source.ts';
export type { MemorySourceOptions } from './source.ts';
export { MemoryTransactionalProducer } from './producer.ts';
export { MemoryControlTopicReader } from './reader.ts';
export { MemoryKafkaAdmin } from './admin.ts';
export { appliedButFailed, rejectCall, timedOut } from './faults.ts';
export type { AdminOperation, Fault, Operation, ProducerOperation, ReaderOperation, SourceOperation } from './faults.ts';
export type { PartitionEntry, StoredRecord } from './log.ts';
