/**
 * ObjectStore adapter for S3 and S3-compatible stores (moto in tests) over `@aws-sdk/client-s3`.
 *
 * Owns: single-request puts below a threshold and multipart uploads above it (parts ≥ 5 MiB, a bounded
 * number in flight, aborted when the source or any part fails, so no half-written upload lingers);
 * our own bounded retries (core/retry.ts's policy) for throttling, 5xx, resets and time-outs
 * (the SDK's retries are off so that one place decides, and tests can see every attempt); translating
 * SDK errors into our classes once (`classifyS3Error`), by status code, error name and errno — never by
 * message text.
 * Must not: log credentials or object bodies, or leave an incomplete multipart upload behind on failure
 * (it is aborted; should the abort fail too, the bucket's AbortIncompleteMultipartUpload rule is the net).
 *
 * Memory bound of putStream: about `multipartThresholdBytes + maxConcurrentParts × partSizeBytes`; what it
 * holds of one put (queued chunks and parts in flight) is reported through `PutOptions.onHeldBytes`.
 */
import { createHash } from 'node:crypto';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import type {
  CompleteMultipartUploadCommandOutput,
  CompletedPart,
  CreateMultipartUploadCommandOutput,
  GetObjectCommandOutput,
  HeadObjectCommandOutput,
  ListObjectsV2CommandOutput,
  PutObjectCommandOutput,
  UploadPartCommandOutput,
} from '@aws-sdk/client-s3';
import { ConfigError, errorMessage, FatalError, IcefloeError, RetriableError } from '../../core/errors.ts';
import { checkBounds, retry, systemClock } from '../../core/retry.ts';
import type { RetryBounds, RetryClock } from '../../core/retry.ts';
import { formatLocation, parseLocation } from '../location.ts';
import { ObjectExistsError, ObjectNotFoundError, iterateChunks } from '../port.ts';
import { ByteQueue } from './byte-queue.ts';
import type { ByteChunks, ByteRange, GetOptions, ObjectInfo, ObjectStore, PutOptions } from '../port.ts';

const MiB = 1024 * 1024;
/** S3's minimum size of every part but the last. */
export const MIN_PART_SIZE = 5 * MiB;
const MAX_PARTS = 10_000;

export type S3Command =
  | PutObjectCommand
  | GetObjectCommand
  | HeadObjectCommand
  | DeleteObjectCommand
  | ListObjectsV2Command
  | CreateMultipartUploadCommand
  | UploadPartCommand
  | CompleteMultipartUploadCommand
  | AbortMultipartUploadCommand;

/** The slice of S3Client this adapter uses; tests substitute a fake. */
export interface S3Sender {
  send(command: S3Command, options?: { abortSignal?: AbortSignal }): Promise<unknown>;
  destroy?(): void;
}

export interface S3StoreConfig {
  readonly region: string;
  /** For S3-compatible stores, e.g. http://127.0.0.1:9000. */
  readonly endpoint?: string;
  /** Path-style addressing (http://host/bucket/key), needed by most S3-compatible stores. */
  readonly forcePathStyle?: boolean;
  /** Static credentials; without them the SDK's default provider chain applies (env, profile, IMDS...). */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string };
  /** Objects larger than this go multipart (default 16 MiB; at least partSizeBytes). */
  readonly multipartThresholdBytes?: number;
  /** Multipart part size (default 8 MiB, minimum 5 MiB). */
  readonly partSizeBytes?: number;
  /** Parts uploaded concurrently (default 2). */
  readonly maxConcurrentParts?: number;
  /** Retries of one request (default 5 attempts, first included; waits of 100 ms up to 5 s; no total limit). */
  readonly retry?: Partial<RetryBounds>;
  /** Per-attempt time-out (default 60 s). */
  readonly requestTimeoutMs?: number;
  /** Test seams. */
  readonly client?: S3Sender;
  readonly clock?: RetryClock;
  readonly random?: () => number;
}

export type S3ErrorKind = 'retriable' | 'not-found' | 'precondition-failed' | 'config' | 'fatal';

const THROTTLING_NAMES = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'RequestThrottled',
  'RequestThrottledException',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'BandwidthLimitExceeded',
  'ProvisionedThroughputExceededException',
  'LimitExceededException',
  'PriorRequestNotComplete',
]);
const TRANSIENT_NAMES = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'InternalError',
  'ServiceUnavailable',
  'ConditionalRequestConflict', // a concurrent conditional write is in progress: try again
  'OperationAborted',
]);
const TRANSIENT_STATUS = new Set([408, 429, 500, 502, 503, 504]);
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'ERR_STREAM_PREMATURE_CLOSE',
]);
const CONFIG_NAMES = new Set([
  'NoSuchBucket',
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'InvalidBucketName',
  'PermanentRedirect',
  'AuthorizationHeaderMalformed',
  'ExpiredToken',
  'InvalidToken',
  'CredentialsProviderError',
]);

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  cause?: unknown;
  $fault?: unknown;
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: unknown };
}

function shape(e: unknown): SdkErrorShape {
  return typeof e === 'object' && e !== null ? (e as SdkErrorShape) : {};
}

/** The status code an SDK error carries, if any. */
export function s3StatusOf(e: unknown): number | undefined {
  const status = shape(e).$metadata?.httpStatusCode;
  return typeof status === 'number' ? status : undefined;
}

/**
 * What an SDK (or network) error means for us. Decided by status, error name and errno only.
 * `timedOut`: our own per-attempt time-out fired (the SDK then reports an AbortError).
 */
export function classifyS3Error(e: unknown, timedOut = false): S3ErrorKind {
  if (timedOut) return 'retriable';
  const s = shape(e);
  const name = typeof s.name === 'string' ? s.name : '';
  const status = s3StatusOf(e);
  if (CONFIG_NAMES.has(name)) return 'config';
  if (THROTTLING_NAMES.has(name) || TRANSIENT_NAMES.has(name)) return 'retriable';
  if (status === 404 || name === 'NoSuchKey' || name === 'NotFound' || name === 'NoSuchUpload') return 'not-found';
  if (status === 412 || name === 'PreconditionFailed') return 'precondition-failed';
  if (status !== undefined && TRANSIENT_STATUS.has(status)) return 'retriable';
  if (status === 401 || status === 403) return 'config';
  if (s.$retryable !== undefined && s.$retryable !== null) return 'retriable';
  // Network failures: the errno may sit on the error or on a cause chain.
  for (let cur: unknown = e, depth = 0; cur !== undefined && cur !== null && depth < 5; cur = shape(cur).cause, depth++) {
    const code = shape(cur).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return 'retriable';
  }
  if (status === undefined && (name === 'AbortError' || name === 'TimeoutError')) return 'retriable';
  if (status !== undefined && status >= 500) return 'retriable';
  if (s.$fault === 'server') return 'retriable';
  return 'fatal';
}

function describe(e: unknown): { status?: number; awsCode?: string; errno?: string } {
  const s = shape(e);
  const out: { status?: number; awsCode?: string; errno?: string } = {};
  const status = s3StatusOf(e);
  if (status !== undefined) out.status = status;
  if (typeof s.name === 'string') out.awsCode = s.name;
  if (typeof s.code === 'string') out.errno = s.code;
  return out;
}

/** What went wrong with an S3 call, on one line: the S3 error code, the HTTP status, the socket error, the message. */
function s3Cause(e: unknown, c: { status?: number; awsCode?: string; errno?: string; timedOutAfterMs?: number }): string {
  if (c.timedOutAfterMs !== undefined) return `no answer within ${c.timedOutAfterMs} ms (the request timed out)`;
  const parts = [c.awsCode, c.status === undefined ? undefined : `HTTP ${c.status}`, c.errno].filter((x): x is string => x !== undefined && x !== '');
  const message = errorMessage(e).replace(/\s+/g, ' ').trim();
  if (message !== '' && !parts.includes(message)) parts.push(message);
  return parts.length === 0 ? 'no answer' : parts.join(', ');
}

function rangeHeader(range: ByteRange): string | undefined {
  if ('suffix' in range) return `bytes=-${range.suffix}`;
  if (range.end === undefined) return `bytes=${range.start}-`;
  return `bytes=${range.start}-${range.end - 1}`;
}

const md5Etag = (bytes: Uint8Array): string => `"${createHash('md5').update(bytes).digest('hex')}"`;

export class S3ObjectStore implements ObjectStore {
  readonly #client: S3Sender;
  readonly #ownsClient: boolean;
  readonly #partSize: number;
  readonly #threshold: number;
  readonly #concurrency: number;
  readonly #retry: RetryBounds;
  readonly #timeoutMs: number;
  readonly #clock: RetryClock;
  readonly #random: () => number;

  constructor(config: S3StoreConfig) {
    this.#partSize = config.partSizeBytes ?? 8 * MiB;
    if (this.#partSize < MIN_PART_SIZE) {
      throw new ConfigError(`S3 part size ${this.#partSize} is below S3's minimum of 5 MiB`, { context: { partSizeBytes: this.#partSize } });
    }
    this.#threshold = Math.max(config.multipartThresholdBytes ?? 16 * MiB, this.#partSize);
    this.#concurrency = Math.max(1, config.maxConcurrentParts ?? 2);
    this.#retry = checkBounds({ maxAttempts: 5, initialDelayMs: 100, maxDelayMs: 5000, totalTimeoutMs: Infinity, ...config.retry });
    this.#timeoutMs = config.requestTimeoutMs ?? 60_000;
    this.#clock = config.clock ?? systemClock;
    this.#random = config.random ?? Math.random;
    if (config.client !== undefined) {
      this.#client = config.client;
      this.#ownsClient = false;
    } else {
      this.#client = new S3Client({
        region: config.region,
        ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint }),
        forcePathStyle: config.forcePathStyle ?? false,
        ...(config.credentials === undefined ? {} : { credentials: config.credentials }),
        maxAttempts: 1, // our retry loop decides (see #attempt)
      }) as S3Sender;
      this.#ownsClient = true;
    }
  }

  #target(location: string): { bucket: string; key: string; rawScheme: string } {
    const p = parseLocation(location);
    if (p.scheme !== 's3') throw new ConfigError(`the S3 store serves s3:// locations, not ${location}`, { context: { location } });
    return { bucket: p.bucket, key: p.key, rawScheme: p.rawScheme };
  }

  /**
   * Runs `fn` (one request, including reading its body) with a per-attempt time-out and bounded
   * retries of retriable failures. Every failure leaves as our error class, translated once, here.
   */
  #attempt<T>(op: string, location: string, fn: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
    return retry(
      async (attempt) => {
        const timeout = AbortSignal.timeout(this.#timeoutMs);
        try {
          return await fn(signal === undefined ? timeout : AbortSignal.any([signal, timeout]));
        } catch (e) {
          if (e instanceof IcefloeError) throw e;
          throw this.#translate(e, classifyS3Error(e, timeout.aborted), op, location, attempt, timeout.aborted ? this.#timeoutMs : undefined);
        }
      },
      { bounds: this.#retry, clock: this.#clock, random: this.#random, signal, retriable: (e) => e instanceof RetriableError },
    );
  }

  #translate(e: unknown, kind: S3ErrorKind, op: string, location: string, attempts: number, timedOutAfterMs?: number): IcefloeError {
    const context = { op, location, attempts, ...describe(e), ...(timedOutAfterMs === undefined ? {} : { timedOutAfterMs }) };
    switch (kind) {
      case 'retriable':
        // The cause in the message: it is what a task's status shows while the store is away (SlowDown, 503, a time-out, a refused connection).
        return new RetriableError(`S3 ${op} ${location} failed after ${attempts} attempt(s): ${s3Cause(e, context)}`, { cause: e, context });
      case 'not-found':
        return new ObjectNotFoundError(location, { cause: e, context });
      case 'precondition-failed':
        return new ObjectExistsError(location, { cause: e, context });
      case 'config':
        return new ConfigError(`S3 ${op} ${location} was refused (${context.awsCode ?? context.status ?? 'access'})`, { cause: e, context });
      case 'fatal':
        return new FatalError(`S3 ${op} ${location} failed`, { cause: e, context });
    }
  }

  async put(location: string, body: Uint8Array, options: PutOptions = {}): Promise<ObjectInfo> {
    const { bucket, key } = this.#target(location);
    let attempts = 0;
    try {
      const out = await this.#attempt(
        'put',
        location,
        (abortSignal) => {
          attempts++;
          return this.#client.send(
            new PutObjectCommand({
              Bucket: bucket,
              Key: key,
              Body: body,
              ContentLength: body.byteLength,
              ...(options.contentType === undefined ? {} : { ContentType: options.contentType }),
              ...(options.ifAbsent === true ? { IfNoneMatch: '*' } : {}),
            }),
            { abortSignal },
          ) as Promise<PutObjectCommandOutput>;
        },
        options.signal,
      );
      return { location, size: body.byteLength, lastModifiedMs: Date.now(), ...(out.ETag === undefined ? {} : { etag: out.ETag }) };
    } catch (e) {
      // A create-only put retried after a lost response meets its own object: 412 although we won.
      // The object is ours if it holds exactly our bytes (single-part ETag = MD5 of the body).
      if (e instanceof ObjectExistsError && attempts > 1) {
        const info = await this.head(location);
        if (info !== undefined && info.size === body.byteLength && info.etag === md5Etag(body)) return info;
      }
      throw e;
    }
  }

  async putStream(location: string, chunks: ByteChunks, options: PutOptions = {}): Promise<ObjectInfo> {
    const { bucket, key } = this.#target(location);
    const queue = new ByteQueue();

    let uploadId: string | undefined;
    const parts: CompletedPart[] = [];
    const inFlight = new Set<Promise<void>>();
    let failure: unknown;
    let total = 0;
    let inFlightBytes = 0;
    let reported = -1;
    const report = (): void => {
      const held = queue.size + inFlightBytes;
      if (held !== reported) options.onHeldBytes?.(held);
      reported = held;
    };

    const startPart = (bytes: Uint8Array): void => {
      const partNumber = parts.length + inFlight.size + 1;
      if (partNumber > MAX_PARTS) {
        throw new ConfigError(`S3 object ${location} needs more than ${MAX_PARTS} parts: raise the part size`, { context: { location } });
      }
      const id = uploadId as string;
      const p = this.#attempt(
        'upload-part',
        location,
        (abortSignal) =>
          this.#client.send(
            new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: id, PartNumber: partNumber, Body: bytes, ContentLength: bytes.byteLength }),
            { abortSignal },
          ) as Promise<UploadPartCommandOutput>,
        options.signal,
      ).then(
        (out) => {
          parts.push({ PartNumber: partNumber, ETag: out.ETag });
        },
        (e: unknown) => {
          failure ??= e;
        },
      );
      inFlightBytes += bytes.byteLength;
      const tracked = p.finally(() => {
        inFlight.delete(tracked);
        inFlightBytes -= bytes.byteLength;
        report();
      });
      inFlight.add(tracked);
      report();
    };

    try {
      for await (const chunk of iterateChunks(chunks)) {
        if (failure !== undefined) break;
        options.signal?.throwIfAborted();
        if (chunk.byteLength === 0) continue;
        // A producer may reuse its buffer once we ask for the next chunk, unless it handed the chunk over.
        queue.push(options.chunksHandedOver === true ? chunk : chunk.slice());
        total += chunk.byteLength;
        report();
        if (uploadId === undefined && queue.size > this.#threshold) uploadId = await this.#createUpload(location, bucket, key, options);
        while (uploadId !== undefined && queue.size >= this.#partSize && failure === undefined) {
          while (inFlight.size >= this.#concurrency) await Promise.race(inFlight);
          if (failure !== undefined) break;
          startPart(queue.take(this.#partSize));
        }
      }
      if (uploadId === undefined) {
        if (failure !== undefined) throw failure;
        // The whole object in one request: held until it is stored.
        const body = queue.take(queue.size);
        inFlightBytes = body.byteLength;
        report();
        return await this.put(location, body, options);
      }
      if (failure === undefined && queue.size > 0) {
        while (inFlight.size >= this.#concurrency) await Promise.race(inFlight);
        if (failure === undefined) startPart(queue.take(queue.size));
      }
      await Promise.all(inFlight);
      if (failure !== undefined) throw failure;
      parts.sort((a, b) => (a.PartNumber ?? 0) - (b.PartNumber ?? 0));
      return await this.#complete(location, bucket, key, uploadId, parts, total, options);
    } catch (e) {
      await Promise.allSettled(inFlight);
      if (uploadId !== undefined) await this.#abort(location, bucket, key, uploadId);
      throw e;
    } finally {
      queue.take(queue.size); // nothing of a finished or failed put stays referenced
      inFlightBytes = 0;
      report();
    }
  }

  /** Starts a multipart upload; its id. */
  async #createUpload(location: string, bucket: string, key: string, options: PutOptions): Promise<string> {
    const created = await this.#attempt(
      'create-multipart-upload',
      location,
      (abortSignal) =>
        this.#client.send(
          new CreateMultipartUploadCommand({
            Bucket: bucket,
            Key: key,
            ...(options.contentType === undefined ? {} : { ContentType: options.contentType }),
          }),
          { abortSignal },
        ) as Promise<CreateMultipartUploadCommandOutput>,
      options.signal,
    );
    if (created.UploadId === undefined) throw new FatalError(`S3 gave no upload id for ${location}`, { context: { location } });
    return created.UploadId;
  }

  async #complete(
    location: string,
    bucket: string,
    key: string,
    uploadId: string,
    parts: CompletedPart[],
    total: number,
    options: PutOptions,
  ): Promise<ObjectInfo> {
    let attempts = 0;
    try {
      const out = await this.#attempt(
        'complete-multipart-upload',
        location,
        (abortSignal) => {
          attempts++;
          return this.#client.send(
            new CompleteMultipartUploadCommand({
              Bucket: bucket,
              Key: key,
              UploadId: uploadId,
              MultipartUpload: { Parts: parts },
              ...(options.ifAbsent === true ? { IfNoneMatch: '*' } : {}),
            }),
            { abortSignal },
          ) as Promise<CompleteMultipartUploadCommandOutput>;
        },
        options.signal,
      );
      return { location, size: total, lastModifiedMs: Date.now(), ...(out.ETag === undefined ? {} : { etag: out.ETag }) };
    } catch (e) {
      // Completed on an earlier attempt whose answer was lost: the upload is gone, the object is there.
      if (attempts > 1 && (e instanceof ObjectNotFoundError || e instanceof ObjectExistsError)) {
        const info = await this.head(location);
        if (info !== undefined && info.size === total && info.etag?.endsWith(`-${parts.length}"`) === true) return info;
      }
      throw e;
    }
  }

  /**
   * Best effort, with the usual retries; the caller rethrows its first error either way. An abort that
   * fails too is left to the bucket's AbortIncompleteMultipartUpload lifecycle rule (docs: deployment).
   */
  async #abort(location: string, bucket: string, key: string, uploadId: string): Promise<void> {
    try {
      await this.#attempt('abort-multipart-upload', location, (abortSignal) =>
        this.#client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }), { abortSignal }),
      );
    } catch {
      // already reported through the original error; nothing more to do here
    }
  }

  async get(location: string, options: GetOptions = {}): Promise<Uint8Array> {
    const { bucket, key } = this.#target(location);
    const range = options.range === undefined ? undefined : rangeHeader(options.range);
    if (options.range !== undefined && 'start' in options.range && options.range.end !== undefined && options.range.end <= options.range.start) {
      return new Uint8Array(0);
    }
    try {
      return await this.#attempt(
        'get',
        location,
        async (abortSignal) => {
          const out = (await this.#client.send(
            new GetObjectCommand({ Bucket: bucket, Key: key, ...(range === undefined ? {} : { Range: range }) }),
            { abortSignal },
          )) as GetObjectCommandOutput;
          if (out.Body === undefined) return new Uint8Array(0);
          return await out.Body.transformToByteArray(); // inside the attempt: a reset mid-body is retried too
        },
        options.signal,
      );
    } catch (e) {
      // 416: a range past the end of an (empty) object reads as nothing.
      if (e instanceof FatalError && e.context['status'] === 416) return new Uint8Array(0);
      throw e;
    }
  }

  async head(location: string): Promise<ObjectInfo | undefined> {
    const { bucket, key } = this.#target(location);
    try {
      const out = await this.#attempt(
        'head',
        location,
        (abortSignal) => this.#client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }), { abortSignal }) as Promise<HeadObjectCommandOutput>,
      );
      return {
        location,
        size: out.ContentLength ?? 0,
        lastModifiedMs: out.LastModified?.getTime() ?? 0,
        ...(out.ETag === undefined ? {} : { etag: out.ETag }),
      };
    } catch (e) {
      if (e instanceof ObjectNotFoundError) return undefined;
      throw e;
    }
  }

  async exists(location: string): Promise<boolean> {
    return (await this.head(location)) !== undefined;
  }

  async delete(location: string): Promise<void> {
    const { bucket, key } = this.#target(location);
    try {
      await this.#attempt('delete', location, (abortSignal) =>
        this.#client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }), { abortSignal }),
      );
    } catch (e) {
      if (e instanceof ObjectNotFoundError) return;
      throw e;
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    const { bucket, key, rawScheme } = this.#target(prefix);
    let token: string | undefined;
    do {
      const page = await this.#attempt(
        'list',
        prefix,
        (abortSignal) =>
          this.#client.send(
            new ListObjectsV2Command({ Bucket: bucket, Prefix: key, ...(token === undefined ? {} : { ContinuationToken: token }) }),
            { abortSignal },
          ) as Promise<ListObjectsV2CommandOutput>,
      );
      for (const o of page.Contents ?? []) {
        if (o.Key === undefined) continue;
        yield {
          location: formatLocation({ rawScheme, bucket, key: o.Key }),
          size: o.Size ?? 0,
          lastModifiedMs: o.LastModified?.getTime() ?? 0,
          ...(o.ETag === undefined ? {} : { etag: o.ETag }),
        };
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  async close(): Promise<void> {
    if (this.#ownsClient) this.#client.destroy?.();
  }
}

