/**
 * The logging port every stage writes through. The composition root (app.ts) backs it with pino; tests
 * may capture it. Fields are structured (never interpolate secrets: configs are logged only in their
 * `redacted()` form).
 */
export interface Logger {
  debug(message: string, fields?: Readonly<Record<string, unknown>>): void;
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  error(message: string, fields?: Readonly<Record<string, unknown>>): void;
  /** A logger whose lines all carry `fields` (e.g. the connector and task). */
  child(fields: Readonly<Record<string, unknown>>): Logger;
}

/** Drops everything: for unit tests of code that logs. */
export const SILENT_LOGGER: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => SILENT_LOGGER,
};
