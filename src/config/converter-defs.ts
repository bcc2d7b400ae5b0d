/**
 * The settings of each converter class Icefloe decodes (converters.ts), as Connect's plugin config
 * endpoint lists them (`GET /connector-plugins/{converter}/config`): only the keys Icefloe reads
 * (JsonConverter's `schemas.enable` and `decimal.format`, the registry converters' URL and credentials,
 * decode/registry/schema-registry.ts), plus Connect's `converter.type`, which every converter is given.
 *
 * Owns: the definitions (docs, defaults, types). Must not: parse a converter's settings (converters.ts
 * and the registry adapter do, with the messages users see).
 */
import { ConfigDef, validators } from './config-def.ts';
import type { ConverterKind } from './converters.ts';

function base(): ConfigDef {
  return new ConfigDef().define({
    name: 'converter.type',
    type: 'STRING',
    importance: 'LOW',
    validator: validators.oneOf(['key', 'value', 'header']),
    doc: 'How this converter will be used (set by the worker: key or value).',
  });
}

function registry(): ConfigDef {
  return base()
    .define({ name: 'schema.registry.url', type: 'LIST', importance: 'HIGH', doc: 'Comma-separated Schema Registry URLs (http or https); user info in a URL is basic auth with basic.auth.credentials.source=URL.' })
    .define({ name: 'basic.auth.credentials.source', type: 'STRING', default: 'URL', importance: 'MEDIUM', validator: validators.oneOf(['URL', 'USER_INFO'], { caseInsensitive: true }),
      doc: 'Where basic-auth credentials come from: the URL\'s user info, or basic.auth.user.info.' })
    .define({ name: 'basic.auth.user.info', type: 'PASSWORD', default: '', importance: 'MEDIUM', doc: '`user:password` for basic.auth.credentials.source=USER_INFO.' })
    .define({ name: 'bearer.auth.credentials.source', type: 'STRING', default: null, importance: 'MEDIUM', validator: validators.oneOf(['STATIC_TOKEN'], { caseInsensitive: true }),
      doc: 'STATIC_TOKEN: send bearer.auth.token.' })
    .define({ name: 'bearer.auth.token', type: 'PASSWORD', default: null, importance: 'MEDIUM', doc: 'Bearer token for the Schema Registry.' })
    .define({ name: 'http.read.timeout.ms', type: 'INT', default: null, importance: 'LOW', validator: validators.range(0), doc: 'Timeout of one registry request in ms.' })
    .define({ name: 'icefloe.registry.request-timeout-ms', type: 'INT', default: null, importance: 'LOW', validator: validators.range(0), doc: 'Timeout of one registry request in ms (wins over http.read.timeout.ms).' })
    .define({ name: 'icefloe.registry.unknown-id-grace-ms', type: 'INT', default: null, importance: 'LOW', validator: validators.range(0),
      doc: 'How long an unknown schema id is retried before the registry is believed (a schema registered moments ago may not be visible yet).' });
}

export const CONVERTER_CONFIG_DEFS: Readonly<Record<ConverterKind, ConfigDef>> = {
  json: base()
    .define({ name: 'schemas.enable', type: 'BOOLEAN', default: 'true', importance: 'HIGH', doc: 'Values are `{"schema": ..., "payload": ...}` envelopes; false: plain JSON.' })
    .define({ name: 'decimal.format', type: 'STRING', default: 'BASE64', importance: 'LOW', validator: validators.oneOf(['BASE64', 'NUMERIC'], { caseInsensitive: true }),
      doc: 'How decimals are written in JSON: BASE64 (bytes of the unscaled value) or NUMERIC.' }),
  string: base(),
  bytes: base(),
  avro: registry(),
  protobuf: registry(),
};
