/**
 * The Apache Iceberg Kafka Connect sink's `partition-by` grammar (`iceberg.tables.default-partition-by`,
 * `iceberg.table.<t>.partition-by`: "bucket(id, 16), day(ts), region"): the one parser that config
 * validation (syntax, when a connector is validated) and the spec builder (partition-spec.ts, when a
 * table is created) both use, so a value accepted at validation means the same at creation.
 *
 * Owns: splitting on commas outside parentheses, the term syntax, transform names (Java's singular and
 * plural), argument counts and orders, and the wording of every syntax problem.
 * Must not: look at a schema (whether the columns exist and fit their transforms is partition-spec.ts's
 * check), or skip a term it cannot read: every problem is an error naming the term.
 */
import { ConfigError } from '../core/errors.ts';
import type { Transform } from './transforms.ts';

/** The transforms `partition-by` can name (no `void`: the Java sink has no syntax for it). */
export type PartitionByTransform = Exclude<Transform, { readonly kind: 'void' } | { readonly kind: 'unknown' }>;

/** One term: the column it reads (as written, dotted for nested fields) and the transform applied. */
export interface PartitionByTerm {
  /** The term as written, trimmed: `bucket(id, 16)`. */
  readonly text: string;
  readonly column: string;
  readonly transform: PartitionByTransform;
}

const TIME_TRANSFORMS: Readonly<Record<string, 'year' | 'month' | 'day' | 'hour'>> = {
  year: 'year',
  years: 'year',
  month: 'month',
  months: 'month',
  day: 'day',
  days: 'day',
  hour: 'hour',
  hours: 'hour',
};

const MAX_INT = 0x7fffffff;

/**
 * Splits `partition-by` text on commas outside parentheses, trimming each term (the Java sink's
 * `,(?![^()]*+\))`): `"bucket(id, 16), day(ts)"` → `["bucket(id, 16)", "day(ts)"]`; blank → [].
 * A stray `)` never drives the depth below zero; `parsePartitionBy` reports the imbalance.
 */
export function splitPartitionBy(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    else if (ch === ')') depth = Math.max(0, depth - 1);
    if (ch === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  out.push(cur.trim());
  return out.length === 1 && out[0] === '' ? [] : out;
}

/** The grammar, so that every syntax problem also says what a valid value looks like. */
const GRAMMAR = 'write comma-separated terms col, identity(col), year|month|day|hour(col), bucket(col, N), truncate(col, W), e.g. "bucket(id, 16), day(ts)"';

function fail(message: string, term?: string): never {
  // An unknown transform's message lists the transforms already.
  const withFix = message.includes('unknown transform') ? message : `${message}; ${GRAMMAR}`;
  throw new ConfigError(withFix, term === undefined ? {} : { context: { term } });
}

function balanced(text: string): boolean {
  let depth = 0;
  for (const ch of text) {
    if (ch === '(') depth++;
    else if (ch === ')' && --depth < 0) return false;
  }
  return depth === 0;
}

/** `bucket`/`truncate` take a column and a positive int, in Java's order `(col, N)` or Spark's `(N, col)`. */
function parseSized(term: string, name: 'bucket' | 'truncate', args: readonly string[]): PartitionByTerm {
  const numeric = args.map((a) => /^\d+$/.test(a));
  if (args.length !== 2 || numeric.filter(Boolean).length !== 1) {
    fail(`partition-by term "${term}": ${name} takes a column and a positive integer`, term);
  }
  const [column, num] = (numeric[0] === true ? [args[1], args[0]] : [args[0], args[1]]) as [string, string];
  const n = Number(num);
  if (n <= 0 || n > MAX_INT) fail(`partition-by term "${term}": ${num} is not a positive integer up to ${MAX_INT}`, term);
  return { text: term, column, transform: name === 'bucket' ? { kind: 'bucket', n } : { kind: 'truncate', width: n } };
}

function parseTerm(term: string, whole: string): PartitionByTerm {
  if (term === '') fail(`partition-by "${whole}" has an empty term`);
  const m = /^(\w+)\s*\((.*)\)$/s.exec(term);
  if (m === null) {
    if (/[()]/.test(term)) fail(`partition-by term "${term}" is malformed`, term);
    return { text: term, column: term, transform: { kind: 'identity' } };
  }
  const written = m[1] as string;
  const name = written.toLowerCase();
  const args = (m[2] as string).split(',').map((a) => a.trim());
  if (args.some((a) => a === '' || /[()]/.test(a))) fail(`partition-by term "${term}" is malformed`, term);
  const time = TIME_TRANSFORMS[name];
  if (time !== undefined || name === 'identity') {
    if (args.length !== 1) fail(`partition-by term "${term}": ${name} takes one column`, term);
    return { text: term, column: args[0] as string, transform: time === undefined ? { kind: 'identity' } : { kind: time } };
  }
  if (name === 'bucket' || name === 'truncate') return parseSized(term, name, args);
  return fail(`partition-by term "${term}": unknown transform ${written} (identity, year, month, day, hour, bucket, truncate)`, term);
}

/**
 * Parses `partition-by` text (or terms already split) as the Apache sink reads it
 * (`SchemaUtils.createPartitionSpec`): `col` (identity), `year(col)`/`years(col)`, `month(s)`, `day(s)`,
 * `hour(s)`, `bucket(col, N)`, `truncate(col, W)`; also `identity(col)` and Spark's `bucket(N, col)` /
 * `truncate(W, col)`. Blank text → no terms (unpartitioned). Throws a ConfigError naming the term.
 */
export function parsePartitionBy(partitionBy: string | readonly string[]): PartitionByTerm[] {
  const whole = typeof partitionBy === 'string' ? partitionBy : partitionBy.join(', ');
  if (!balanced(whole)) fail(`partition-by "${whole}" has unbalanced parentheses`);
  const terms = typeof partitionBy === 'string' ? splitPartitionBy(partitionBy) : partitionBy.map((t) => t.trim());
  return terms.map((t) => parseTerm(t, whole));
}

/** What is wrong with the syntax of `partition-by` text, or undefined: for config validation, which has no schema. */
export function partitionByProblem(text: string): string | undefined {
  try {
    parsePartitionBy(text);
    return undefined;
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
}
