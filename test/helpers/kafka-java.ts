/**
 * Kafka's own Java console clients (the stack's Kafka jars on Java 17) as a second, independent client:
 * they write and print what the librdkafka binding cannot, such as a header whose value is null
 * (`null.marker` / `null.literal`). Each call starts a JVM (~1–3 s on the stack's 2 cores).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { stackEndpoints } from './stack.ts';

/** The text that stands for a null header value (or key/value) in both directions. */
export const JAVA_NULL = '<NULL>';

function runJava(mainClass: string, args: readonly string[], stdin?: string, timeoutMs = 60_000): Promise<string> {
  const e = stackEndpoints();
  return new Promise((resolve, reject) => {
    const child = execFile(
      e.java17,
      ['-Xmx256m', '-XX:TieredStopAtLevel=1', '-cp', join(e.kafkaHome, 'lib', '*'), mainClass, '--bootstrap-server', e.kafkaBootstrap, ...args],
      { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => (err ? reject(new Error(`${mainClass}: ${stderr || err.message}`, { cause: err })) : resolve(stdout)),
    );
    child.stdin?.end(stdin ?? '');
  });
}

export interface JavaRecord {
  /** Header values: a string, or null for a null value. Keys in order. */
  readonly headers: readonly (readonly [string, string | null])[];
  readonly key: string | null;
  readonly value: string;
}

/**
 * Produces `records` in order to a one-partition topic with kafka-console-producer: headers, key and value
 * are parsed from `h1:v1,h2:v2<TAB>key<TAB>value` lines, `<NULL>` meaning null. Every record needs at
 * least one header (the reader wants a pair); header keys and values must not contain `,`, `:`, tabs or
 * newlines.
 */
export async function javaProduce(topic: string, records: readonly JavaRecord[]): Promise<void> {
  const field = (v: string | null): string => (v === null ? JAVA_NULL : v);
  const lines = records.map((r) => {
    const headers = r.headers.map(([k, v]) => `${k}:${field(v)}`).join(',');
    return `${headers}\t${field(r.key)}\t${r.value}`;
  });
  await runJava(
    'org.apache.kafka.tools.ConsoleProducer',
    [
      '--topic', topic,
      '--reader-property', 'parse.headers=true',
      '--reader-property', 'parse.key=true',
      '--reader-property', `null.marker=${JAVA_NULL}`,
      '--reader-property', 'headers.delimiter=\t',
      '--reader-property', 'key.separator=\t',
      '--sync',
    ],
    `${lines.join('\n')}\n`,
  );
}

/** Reads `count` records of `topic` from the start with kafka-console-consumer; header values as text or null. */
export async function javaConsume(topic: string, count: number): Promise<JavaRecord[]> {
  const out = await runJava('org.apache.kafka.tools.consumer.ConsoleConsumer', [
    '--topic', topic,
    '--from-beginning',
    '--max-messages', String(count),
    '--timeout-ms', '30000',
    '--formatter-property', 'print.headers=true',
    '--formatter-property', 'print.key=true',
    '--formatter-property', `null.literal=${JAVA_NULL}`,
    '--formatter-property', 'headers.separator=,',
    '--formatter-property', 'headers.key.separator=:',
    '--formatter-property', 'key.separator=\t',
    '--formatter-property', 'line.separator=\n',
  ]);
  const parse = (v: string): string | null => (v === JAVA_NULL ? null : v);
  return out
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      const [headers = '', key = '', value = ''] = line.split('\t');
      const pairs = headers === 'NO_HEADERS' || headers === '' ? [] : headers.split(',').map((h) => {
        const at = h.indexOf(':');
        return [h.slice(0, at), parse(h.slice(at + 1))] as const;
      });
      return { headers: pairs, key: parse(key), value };
    });
}
