/**
 * Key and value converters as Connect configures them (reference/connect-rest.md §2.3): the class in
 * `value.converter`, its settings under `value.converter.*`, and the inheritance rule — a connector that
 * sets its own converter class uses only its own sub-settings; one that does not inherits the worker's
 * converter together with the worker's sub-settings (never a merge of the two).
 *
 * Owns: recognising the converter classes Icefloe decodes and their typed settings.
 * Must not: decode anything (that is decode/), or guess a converter for a class it does not know.
 */
import { missingMessage, invalidMessage, parseType } from './config-def.ts';

export type ConverterKind = 'json' | 'string' | 'bytes' | 'avro' | 'protobuf';

/** Converter classes users put in configs, by the format Icefloe decodes them as. */
export const KNOWN_CONVERTERS: Readonly<Record<string, ConverterKind>> = {
  'org.apache.kafka.connect.json.JsonConverter': 'json',
  'org.apache.kafka.connect.storage.StringConverter': 'string',
  'org.apache.kafka.connect.converters.ByteArrayConverter': 'bytes',
  'io.confluent.connect.avro.AvroConverter': 'avro',
  'io.confluent.connect.protobuf.ProtobufConverter': 'protobuf',
};

export const JSON_CONVERTER = 'org.apache.kafka.connect.json.JsonConverter';

export interface ConverterConfig {
  readonly className: string;
  readonly kind: ConverterKind;
  /** JsonConverter `schemas.enable` (default true: `{"schema":…,"payload":…}` envelopes). */
  readonly schemasEnable: boolean;
  /** JsonConverter `decimal.format`: BASE64 (default) or NUMERIC. */
  readonly decimalFormat: 'BASE64' | 'NUMERIC';
  /** Avro/Protobuf: `schema.registry.url`, comma-separated. */
  readonly schemaRegistryUrls: readonly string[];
  /** Every `<converter>.*` setting, prefix stripped (registry auth: `basic.auth.*`, `bearer.auth.*`). */
  readonly props: Readonly<Record<string, string>>;
}

/** A problem and the full key it concerns (`value.converter.schema.registry.url`). */
export interface ConverterProblem {
  readonly key: string;
  readonly message: string;
}

export interface ConverterResult {
  /** Null when the class is unknown. */
  readonly converter: ConverterConfig | null;
  readonly errors: readonly ConverterProblem[];
}

/**
 * Types a converter from its class and its prefixed settings. `key` is `key.converter` or
 * `value.converter`; error texts name the full key, as Connect does when it validates converter configs.
 */
export function parseConverter(key: string, className: string, props: Readonly<Record<string, string>>): ConverterResult {
  const kind = KNOWN_CONVERTERS[className];
  if (kind === undefined) {
    const message = invalidMessage(key, className, `Class ${className} could not be found. Icefloe decodes: ${Object.keys(KNOWN_CONVERTERS).join(', ')}`);
    return { converter: null, errors: [{ key, message }] };
  }
  const errors: ConverterProblem[] = [];
  const problem = (k: string, message: string): void => {
    errors.push({ key: k, message });
  };
  let schemasEnable = true;
  let decimalFormat: 'BASE64' | 'NUMERIC' = 'BASE64';
  let schemaRegistryUrls: readonly string[] = [];
  if (kind === 'json') {
    const se = props['schemas.enable'];
    if (se !== undefined) {
      const parsed = parseType('BOOLEAN', se);
      if ('problem' in parsed) problem(`${key}.schemas.enable`, invalidMessage(`${key}.schemas.enable`, se, parsed.problem));
      else schemasEnable = parsed.value as boolean;
    }
    const df = props['decimal.format'];
    if (df !== undefined) {
      const upper = df.trim().toUpperCase();
      if (upper === 'BASE64' || upper === 'NUMERIC') decimalFormat = upper;
      else problem(`${key}.decimal.format`, invalidMessage(`${key}.decimal.format`, df, 'String must be one of: BASE64, NUMERIC'));
    }
  }
  if (kind === 'avro' || kind === 'protobuf') {
    const url = props['schema.registry.url'];
    if (url === undefined || url.trim() === '') {
      // Connect's missing-key text, then the fix: the converter reads every record's schema from the registry.
      problem(`${key}.schema.registry.url`, `${missingMessage(`${key}.schema.registry.url`)} ${className} reads each record's schema from a schema registry: set ${key}.schema.registry.url to its URL (e.g. http://schema-registry:8081), or use a converter that needs none`);
    }
    else {
      schemaRegistryUrls = url.split(',').map((u) => u.trim()).filter((u) => u !== '');
      const bad = schemaRegistryUrls.find((u) => !/^https?:\/\/[^\s/]+/.test(u));
      if (bad !== undefined) problem(`${key}.schema.registry.url`, invalidMessage(`${key}.schema.registry.url`, url, `${bad} is not an http(s) URL`));
    }
  }
  return { converter: Object.freeze({ className, kind, schemasEnable, decimalFormat, schemaRegistryUrls, props: Object.freeze({ ...props }) }), errors };
}

/** The inheritance rule of §2.3: the connector's converter if it set one, else the worker's. */
export function effectiveConverter(connector: ConverterConfig | null, worker: ConverterConfig): ConverterConfig {
  return connector ?? worker;
}
