/**
 * The one place librdkafka errors become Icefloe errors (core/errors.ts). Decisions use the error's
 * code and librdkafka's own flags (`isFatal`, `isRetriable`, `isTxnRequiresAbort`), never its text.
 *
 * Owns: the code table and the translation. Must not: import the client (the table is plain numbers, so
 * unit tests run without the native addon), retry, or log.
 */
import { ConfigError, FatalError, IcefloeError, RetriableError } from '../../core/errors.ts';
import { ProducerResetRequiredError, TransactionAbortRequiredError, fencedError } from '../port.ts';

/** librdkafka error codes we decide on (rdkafkacpp.h, librdkafka 2.15). */
export const KAFKA_CODES = {
  ERR__DESTROY: -197,
  ERR__TRANSPORT: -195,
  ERR__MSG_TIMED_OUT: -192,
  ERR__PARTITION_EOF: -191,
  ERR__UNKNOWN_PARTITION: -190,
  ERR__UNKNOWN_TOPIC: -188,
  ERR__ALL_BROKERS_DOWN: -187,
  ERR__INVALID_ARG: -186,
  ERR__TIMED_OUT: -185,
  ERR__QUEUE_FULL: -184,
  ERR__REVOKE_PARTITIONS: -174,
  ERR__ASSIGN_PARTITIONS: -175,
  ERR__CONFLICT: -173,
  ERR__STATE: -172,
  ERR__NOENT: -156,
  ERR__FATAL: -150,
  ERR__FENCED: -144,
  ERR__ASSIGNMENT_LOST: -142,
  ERR__AUTO_OFFSET_RESET: -140,
  ERR_OFFSET_OUT_OF_RANGE: 1,
  ERR_UNKNOWN_TOPIC_OR_PART: 3,
  ERR_LEADER_NOT_AVAILABLE: 5,
  ERR_NOT_LEADER_FOR_PARTITION: 6,
  ERR_REQUEST_TIMED_OUT: 7,
  ERR_NETWORK_EXCEPTION: 13,
  ERR_COORDINATOR_LOAD_IN_PROGRESS: 14,
  ERR_COORDINATOR_NOT_AVAILABLE: 15,
  ERR_NOT_COORDINATOR: 16,
  ERR_ILLEGAL_GENERATION: 22,
  ERR_UNKNOWN_MEMBER_ID: 25,
  ERR_REBALANCE_IN_PROGRESS: 27,
  ERR_TOPIC_AUTHORIZATION_FAILED: 29,
  ERR_GROUP_AUTHORIZATION_FAILED: 30,
  ERR_CLUSTER_AUTHORIZATION_FAILED: 31,
  ERR_TOPIC_ALREADY_EXISTS: 36,
  ERR_INVALID_CONFIG: 40,
  ERR_INVALID_PRODUCER_EPOCH: 47,
  ERR_INVALID_TXN_STATE: 48,
  ERR_INVALID_PRODUCER_ID_MAPPING: 49,
  ERR_CONCURRENT_TRANSACTIONS: 51,
  ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 53,
  ERR_NON_EMPTY_GROUP: 68,
  ERR_GROUP_ID_NOT_FOUND: 69,
  ERR_FENCED_LEADER_EPOCH: 74,
  ERR_UNKNOWN_LEADER_EPOCH: 75,
  ERR_FENCED_INSTANCE_ID: 82,
  ERR_UNSTABLE_OFFSET_COMMIT: 88,
  ERR_PRODUCER_FENCED: 90,
  ERR_FENCED_MEMBER_EPOCH: 110,
} as const;

const C = KAFKA_CODES;
const CODE_NAMES = new Map<number, string>(Object.entries(KAFKA_CODES).map(([name, code]) => [code, name]));

/** Another producer owns our transactional.id. */
const FENCED_PRODUCER = new Set<number>([C.ERR__FENCED, C.ERR_PRODUCER_FENCED, C.ERR_INVALID_PRODUCER_EPOCH]);
/** The consumer's group membership is stale: a transactional offset commit with it must be aborted. */
const STALE_GROUP_MEMBER = new Set<number>([C.ERR_ILLEGAL_GENERATION, C.ERR_UNKNOWN_MEMBER_ID, C.ERR_FENCED_INSTANCE_ID, C.ERR_FENCED_MEMBER_EPOCH, C.ERR__ASSIGNMENT_LOST]);
const TRANSIENT = new Set<number>([
  C.ERR__TRANSPORT, C.ERR__MSG_TIMED_OUT, C.ERR__ALL_BROKERS_DOWN, C.ERR__TIMED_OUT, C.ERR__QUEUE_FULL,
  C.ERR_LEADER_NOT_AVAILABLE, C.ERR_NOT_LEADER_FOR_PARTITION, C.ERR_REQUEST_TIMED_OUT, C.ERR_NETWORK_EXCEPTION,
  C.ERR_COORDINATOR_LOAD_IN_PROGRESS, C.ERR_COORDINATOR_NOT_AVAILABLE, C.ERR_NOT_COORDINATOR, C.ERR_REBALANCE_IN_PROGRESS,
  C.ERR_CONCURRENT_TRANSACTIONS, C.ERR_UNSTABLE_OFFSET_COMMIT,
  // The client's cached leader epoch is older (or newer) than the broker's: after a broker restart or freeze,
  // until its metadata is refreshed (leader-retry.ts). Unknown to the table, it failed a task (restarted by
  // the worker) whose new assignment's log ranges were asked right after a freeze (e2e sink-broker-chaos).
  C.ERR_FENCED_LEADER_EPOCH, C.ERR_UNKNOWN_LEADER_EPOCH,
]);
const MISCONFIGURED = new Set<number>([
  C.ERR__INVALID_ARG, C.ERR_TOPIC_AUTHORIZATION_FAILED, C.ERR_GROUP_AUTHORIZATION_FAILED, C.ERR_CLUSTER_AUTHORIZATION_FAILED,
  C.ERR_INVALID_CONFIG, C.ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED, C.ERR__UNKNOWN_TOPIC, C.ERR_UNKNOWN_TOPIC_OR_PART, C.ERR__UNKNOWN_PARTITION,
]);

/** The shape of the client's `LibrdKafkaError` (and of the plain objects its transaction workers return). */
export interface KafkaErrorLike {
  readonly code?: unknown;
  readonly message?: unknown;
  readonly isFatal?: unknown;
  readonly isRetriable?: unknown;
  readonly isTxnRequiresAbort?: unknown;
}

export type KafkaOperation =
  | 'connect' | 'subscribe' | 'poll' | 'seek' | 'committed' | 'position' | 'pause' | 'resume' | 'assign'
  | 'init-transactions' | 'begin-transaction' | 'send' | 'send-offsets' | 'commit-transaction' | 'abort-transaction'
  | 'admin' | 'read-control' | 'close' | 'watermarks';

const TXN_OPS = new Set<KafkaOperation>(['begin-transaction', 'send', 'send-offsets', 'commit-transaction']);
/** Every call of the transactional producer. */
const PRODUCER_OPS = new Set<KafkaOperation>([...TXN_OPS, 'init-transactions', 'abort-transaction']);
/**
 * A transactional producer that reports these is in a state it cannot leave: librdkafka raises a fatal
 * error for INVALID_TXN_STATE and INVALID_PRODUCER_ID_MAPPING from the coordinator (seen after a broker
 * restart: send-offsets failed on the transport, then the abort and the next begin failed), and answers
 * ERR__STATE when its state machine refuses the call (a begin after an abort that did not complete).
 */
const PRODUCER_STUCK = new Set<number>([C.ERR__FATAL, C.ERR_INVALID_TXN_STATE, C.ERR_INVALID_PRODUCER_ID_MAPPING, C.ERR__STATE]);

export function kafkaCodeName(code: number): string {
  return CODE_NAMES.get(code) ?? `code ${code}`;
}

/**
 * Translates a client error for `operation`. Order matters: fencing first (a fenced producer's errors are
 * also fatal), then librdkafka's abortable flag, its fatal flag, and only then retriable / config codes.
 * `fenced` says this producer was already seen fenced: its later generic fatal errors are that fencing.
 *
 * The transactional producer's errors fall in four classes: fenced (`fencedError`; producer.ts tells a
 * coordinator time-out from another process), abortable (`TransactionAbortRequiredError`: abort, rewind),
 * stuck (`ProducerResetRequiredError`: fatal or invalid state; re-create the producer, rewind) and
 * retriable. A fatal error of any other client is a `FatalError` marked `restartable`: the client is
 * broken, a new task incarnation with new clients may well work (a broker-killed client, an error we do
 * not know); only a configuration, a fence or a position outside the log are decisions.
 */
export function translateKafkaError(error: unknown, operation: KafkaOperation, fenced = false): IcefloeError {
  if (error instanceof IcefloeError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as KafkaErrorLike;
  const code = typeof e.code === 'number' ? e.code : Number.NaN;
  const text = typeof e.message === 'string' ? e.message : String(error);
  const context = { operation, kafkaCode: Number.isNaN(code) ? null : code, kafkaError: Number.isNaN(code) ? null : kafkaCodeName(code) };
  const message = `Kafka ${operation} failed: ${text}${Number.isNaN(code) ? '' : ` (${kafkaCodeName(code)})`}`;
  const options = { cause: error, context };

  if (FENCED_PRODUCER.has(code) || (fenced && (e.isFatal === true || code === C.ERR__FATAL))) {
    // producer.ts tells another process from the coordinator's own time-out (explainFence).
    return fencedError(`${message}: the producer's epoch was fenced`, options);
  }
  if (e.isTxnRequiresAbort === true || (TXN_OPS.has(operation) && STALE_GROUP_MEMBER.has(code))) {
    return new TransactionAbortRequiredError(`${message}: the transaction must be aborted and the cycle re-read`, options);
  }
  if (PRODUCER_OPS.has(operation) && (e.isFatal === true || PRODUCER_STUCK.has(code))) {
    return new ProducerResetRequiredError(`${message}: the transactional producer cannot leave this state; it is re-created (same transactional.id) and the cycle re-read`, options);
  }
  const restartable = { cause: error, context: { ...context, restartable: true } };
  if (e.isFatal === true || code === C.ERR__FATAL) return new FatalError(message, restartable);
  if (code === C.ERR__AUTO_OFFSET_RESET || code === C.ERR_OFFSET_OUT_OF_RANGE) {
    return new FatalError(`${message}: the position is outside the log (topic recreated, retention, or offsets reset)`, options);
  }
  if (e.isRetriable === true || TRANSIENT.has(code)) return new RetriableError(message, options);
  if (MISCONFIGURED.has(code)) return new ConfigError(message, options);
  // Unknown to us: stop the task with the facts rather than loop on a retry that may never help; the
  // worker starts a new incarnation (new clients) with a growing back-off.
  return new FatalError(message, restartable);
}

/** What the producer knows when it is told it is fenced (producer.ts). */
export interface FenceFacts {
  readonly transactionalId: string;
  /** How long its current transaction has been open (undefined: none is). */
  readonly ageMs: number | undefined;
  readonly transactionTimeoutMs: number;
  /** The longest time this process did not run (frozen, stopped) while the transaction was open. */
  readonly stalledMs: number;
}

/** A process that did not run this long while its transaction was open was frozen, not just slow. */
export const FROZEN_MS = 5_000;

/**
 * A fence in a transaction older than `transaction.timeout.ms` may be the coordinator's own time-out
 * abort (seen after a broker outage: re-create the producer) — unless this process was itself frozen
 * meanwhile, which is how a zombie's transaction grows old while a successor takes over. Any other fence
 * can only be another process registering our transactional.id. (producer.ts's header says why.)
 */
export function explainFence(e: IcefloeError, f: FenceFacts): IcefloeError {
  const context = { ...e.context, transactionalId: f.transactionalId, ...(f.ageMs === undefined ? {} : { transactionAgeMs: Math.round(f.ageMs) }) };
  const other = `another process uses transactional.id ${f.transactionalId} (a successor of this task, or two workers with overlapping icefloe.tasks.id-offset?); this task stops so that only one of them commits`;
  if (f.ageMs !== undefined && f.ageMs >= f.transactionTimeoutMs) {
    if (f.stalledMs >= FROZEN_MS) {
      return fencedError(`${e.message}: this process did not run for ${Math.round(f.stalledMs)} ms while its transaction was open (frozen): ${other}`, { cause: e, context: { ...context, stalledMs: Math.round(f.stalledMs) } });
    }
    return new ProducerResetRequiredError(
      `${e.message}: the transaction was open ${Math.round(f.ageMs)} ms, past transaction.timeout.ms (${f.transactionTimeoutMs}), so the coordinator aborted it and bumped the epoch; the producer is re-created (same transactional.id) and the cycle re-read`,
      { cause: e, context },
    );
  }
  return fencedError(`${e.message}: ${other}`, { cause: e, context });
}
