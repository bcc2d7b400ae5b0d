/**
 * AWS Signature Version 4 for REST catalog requests (AWS Glue's Iceberg endpoint, service `glue`; Amazon
 * S3 Tables, service `s3tables`), over `@smithy/signature-v4` with the pure-JS SHA-256.
 *
 * Owns: turning one HTTP request into the headers that sign it, the way Iceberg's Java RESTSigV4Signer and
 * PyIceberg's SigV4Adapter (botocore) do: the canonical path is the wire path URI-encoded once more (AWS's
 * rule for every service but S3, so `%1F` in a namespace path signs as `%251F`), and the payload hash is
 * also sent as `x-amz-content-sha256`.
 * Must not: log or return the secret key; answers only the headers to add.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';

export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export type AwsCredentialsProvider = () => Promise<AwsCredentials>;

export interface SigV4Options {
  readonly region: string;
  /** `glue`, `s3tables`, or `execute-api` for an API Gateway in front of a catalog. */
  readonly service: string;
  readonly credentials: AwsCredentials | AwsCredentialsProvider;
  /** Send the payload hash as `x-amz-content-sha256` (default true; AWS's published test vectors predate it). */
  readonly contentSha256Header?: boolean;
}

export interface RequestToSign {
  readonly method: string;
  readonly url: URL;
  /** Headers that will be sent (lower- or mixed-case); all are signed except the unsignable ones. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
}

/** The headers to add to the request: authorization, x-amz-date, maybe x-amz-security-token and x-amz-content-sha256. */
export async function signSigV4(request: RequestToSign, options: SigV4Options, now: Date = new Date()): Promise<Record<string, string>> {
  const { url } = request;
  const query: Record<string, string | string[]> = {};
  for (const [k, v] of url.searchParams) {
    const prev = query[k];
    query[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  const headers: Record<string, string> = { host: url.host };
  for (const [k, v] of Object.entries(request.headers)) if (k.toLowerCase() !== 'host') headers[k] = v;
  const signer = new SignatureV4({
    credentials: options.credentials,
    region: options.region,
    service: options.service,
    sha256: Sha256,
    uriEscapePath: true,
    applyChecksum: options.contentSha256Header ?? true,
  });
  const signed = await signer.sign(
    {
      method: request.method.toUpperCase(),
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port === '' ? {} : { port: Number(url.port) }),
      path: url.pathname,
      query,
      headers,
      body: request.body ?? '',
    },
    { signingDate: now },
  );
  const out: Record<string, string> = {};
  const sent = new Set(Object.keys(request.headers).map((k) => k.toLowerCase()));
  for (const [k, v] of Object.entries(signed.headers)) {
    const lower = k.toLowerCase();
    if (lower === 'host' || sent.has(lower)) continue; // fetch sets Host itself; the caller's headers stay as they are
    out[lower] = v;
  }
  return out;
}
