/**
 * How log lines look on stderr (docs/sink.md, "Logs"): JSON lines (pino's, byte for byte) for machines
 * and files, or one human-readable line per record for a person at a terminal —
 * `HH:MM:SS.mmm LEVEL message  connector=… task=… key=value …`, with errors and traces on the following
 * indented lines and the level coloured when colour is on.
 *
 * Owns: the choice of format (`icefloe.log.format`, ICEFLOE_LOG_FORMAT, whether stderr is a terminal,
 * NO_COLOR) and the pretty line of one JSON record. Must not: write anywhere or read the environment (the
 * entry point passes what it read; the composition root plugs prettyLine into pino as its destination).
 */
import { ConfigError } from './errors.ts';

/** The values of `icefloe.log.format` and ICEFLOE_LOG_FORMAT. */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormatSetting = (typeof LOG_FORMATS)[number];

/** The decision, made once in the worker and handed to its task processes (their stderr is the worker's). */
export interface LogOutput {
  readonly format: 'json' | 'pretty';
  /** ANSI colours in pretty lines: only on a terminal, and never with NO_COLOR set. */
  readonly colour: boolean;
}

export const JSON_LOGS: LogOutput = Object.freeze({ format: 'json', colour: false });

/** What the entry point read from the process: the environment and whether stderr is a terminal. */
export interface LogEnvironment {
  /** ICEFLOE_LOG_FORMAT (overrides the setting; for tools and tests). */
  readonly format?: string | undefined;
  /** NO_COLOR (https://no-color.org): set and not empty turns colour off. */
  readonly noColor?: string | undefined;
  readonly stderrIsTty: boolean;
}

/** stderr not a terminal, nothing set: what a worker under a supervisor or with stderr in a file sees. */
export const PLAIN_ENVIRONMENT: LogEnvironment = Object.freeze({ stderrIsTty: false });

function isLogFormat(v: string): v is LogFormatSetting {
  return (LOG_FORMATS as readonly string[]).includes(v);
}

/**
 * The output for a worker whose `icefloe.log.format` is `setting`: ICEFLOE_LOG_FORMAT, when set, wins;
 * `auto` is pretty on a terminal and JSON otherwise (a file, a pipe, a log collector).
 */
export function resolveLogOutput(setting: LogFormatSetting, env: LogEnvironment): LogOutput {
  const override = env.format?.trim().toLowerCase();
  let chosen = setting;
  if (override !== undefined && override !== '') {
    if (!isLogFormat(override)) throw new ConfigError(`ICEFLOE_LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}, not '${env.format}'`);
    chosen = override;
  }
  const pretty = chosen === 'pretty' || (chosen === 'auto' && env.stderrIsTty);
  if (!pretty) return JSON_LOGS;
  const noColor = env.noColor !== undefined && env.noColor !== '';
  return { format: 'pretty', colour: env.stderrIsTty && !noColor };
}

// ---------------------------------------------------------------------------------------------------
// The pretty line
// ---------------------------------------------------------------------------------------------------

export interface PrettyOptions {
  readonly colour: boolean;
  /** The clock the time is shown in (default local: what the person at the terminal reads). */
  readonly timeZone?: 'local' | 'utc';
}

/** pino's numeric levels; anything else is shown as it comes. */
const LEVELS: Readonly<Record<number, { readonly label: string; readonly colour: string }>> = {
  10: { label: 'TRACE', colour: '90' },
  20: { label: 'DEBUG', colour: '36' },
  30: { label: 'INFO', colour: '32' },
  40: { label: 'WARN', colour: '33' },
  50: { label: 'ERROR', colour: '31' },
  60: { label: 'FATAL', colour: '1;35' },
};

/** The record's own keys (not fields); `pid` is only ever a field in pretty mode (app.ts leaves it out of the base). */
const RECORD_KEYS = new Set(['level', 'time', 'msg']);
/** Shown first, in this order: which connector and task a line is about. */
const BINDING_KEYS = ['connector', 'task'];
/** Shown on the following lines: a cause or a trace reads better on its own line than inside key=value. */
const DETAIL_KEYS = new Set(['error', 'err', 'cause', 'stack', 'trace']);

const INDENT = '    ';

const paint = (on: boolean, code: string, text: string): string => (on ? `\x1b[${code}m${text}\x1b[0m` : text);

/**
 * Control characters other than newline and tab shown escaped: a field can carry text from a record or
 * a server, which must not move the cursor or recolour the terminal.
 */
function safe(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function clock(time: unknown, zone: 'local' | 'utc'): string {
  const d = new Date(typeof time === 'number' || typeof time === 'string' ? time : Number.NaN);
  if (Number.isNaN(d.getTime())) return '--:--:--.---';
  const utc = zone === 'utc';
  const two = (n: number): string => String(n).padStart(2, '0');
  const h = utc ? d.getUTCHours() : d.getHours();
  const m = utc ? d.getUTCMinutes() : d.getMinutes();
  const s = utc ? d.getUTCSeconds() : d.getSeconds();
  const ms = utc ? d.getUTCMilliseconds() : d.getMilliseconds();
  return `${two(h)}:${two(m)}:${two(s)}.${String(ms).padStart(3, '0')}`;
}

function level(value: unknown, colour: boolean): string {
  const known = typeof value === 'number' ? LEVELS[value] : undefined;
  const label = known?.label ?? String(value ?? '').toUpperCase();
  const padded = label.padEnd(5);
  return known === undefined ? padded : paint(colour, known.colour, label) + padded.slice(label.length);
}

/** An inline value: strings quoted (JSON escapes) when empty or holding spaces, quotes, `=` or control characters. */
function inline(value: unknown): string {
  // eslint-disable-next-line no-control-regex
  if (typeof value === 'string') return value === '' || /[\s"=\\\x00-\x1f\x7f-\x9f]/.test(value) ? safe(JSON.stringify(value)) : value;
  if (value === null || typeof value !== 'object') return String(value);
  return safe(JSON.stringify(value));
}

/** A detail's text: a serialized Error's stack (it starts with the message), else the string or its JSON. */
function detailText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null) {
    const stack = (value as { stack?: unknown }).stack;
    if (typeof stack === 'string' && stack !== '') return stack;
  }
  return JSON.stringify(value) ?? String(value);
}

function detailLines(key: string, value: unknown, colour: boolean): string[] {
  const [first = '', ...rest] = safe(detailText(value)).split(/\r?\n/);
  return [`${INDENT}${paint(colour, '2', `${key}:`)} ${first}`, ...rest.map((l) => `${INDENT}  ${l}`)];
}

/**
 * One JSON log record as a person reads it: `HH:MM:SS.mmm LEVEL message  key=value …`; the connector and
 * task first, then the other fields in the record's order; errors, traces and any multi-line value on the
 * following lines, indented. No trailing newline.
 */
export function prettyLine(record: Readonly<Record<string, unknown>>, options: PrettyOptions): string {
  const colour = options.colour;
  const [message = '', ...messageRest] = safe(typeof record['msg'] === 'string' ? record['msg'] : record['msg'] === undefined ? '' : String(record['msg'])).split(/\r?\n/);
  const keys = Object.keys(record).filter((k) => !RECORD_KEYS.has(k) && record[k] !== undefined);
  const ordered = [...BINDING_KEYS.filter((k) => keys.includes(k)), ...keys.filter((k) => !BINDING_KEYS.includes(k))];
  const fields: string[] = [];
  const details: string[] = [];
  for (const key of ordered) {
    const value = record[key];
    const multiLine = typeof value === 'string' && value.includes('\n');
    if (DETAIL_KEYS.has(key) || multiLine) details.push(...detailLines(safe(key), value, colour));
    else fields.push(`${paint(colour, '2', `${safe(key)}=`)}${inline(value)}`);
  }
  const head = `${paint(colour, '2', clock(record['time'], options.timeZone ?? 'local'))} ${level(record['level'], colour)} ${message}`;
  const line = fields.length === 0 ? head.trimEnd() : `${head}  ${fields.join(' ')}`;
  return [line, ...messageRest.map((l) => `${INDENT}${l}`), ...details].join('\n');
}

/** prettyLine of one line pino wrote; text that is not a JSON object passes unchanged. */
export function prettyFromJson(text: string, options: PrettyOptions): string {
  const trimmed = text.endsWith('\n') ? text.slice(0, -1) : text;
  let record: unknown;
  try {
    record = JSON.parse(trimmed);
  } catch {
    return trimmed;
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record)) return trimmed;
  return prettyLine(record as Record<string, unknown>, options);
}
