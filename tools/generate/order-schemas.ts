/**
 * The schemas of the order events (orders.ts) in every format the sink reads, versions 1 and 2 (see
 * orders.ts on versions and on the decimal choices): the Avro schema, the .proto text Confluent's
 * ProtobufConverter registers, and the Connect schema JsonConverter's `schemas.enable=true` envelope carries.
 *
 * Owns: the schema texts. Must not: encode values (order-encodings.ts does).
 */
import { ORDER_STATUSES } from './orders.ts';
import type { SchemaVersion } from './orders.ts';

export const ORDER_NAMESPACE = 'io.icefloe.examples';
export const ORDER_RECORD = 'OrderEvent';

function avroDecimal(precision: number): Record<string, unknown> {
  return { type: 'bytes', logicalType: 'decimal', precision, scale: 2 };
}

/** The Avro schema (JSON form) of a version: record `io.icefloe.examples.OrderEvent`. */
export function orderAvroSchema(version: SchemaVersion): Record<string, unknown> {
  const fields: Record<string, unknown>[] = [
    { name: 'order_id', type: 'string' },
    { name: 'region', type: 'string', doc: 'eu, us or apac' },
    { name: 'status', type: { type: 'enum', name: 'OrderStatus', symbols: [...ORDER_STATUSES] } },
    {
      name: 'customer',
      type: {
        type: 'record',
        name: 'Customer',
        fields: [
          { name: 'id', type: 'long' },
          { name: 'name', type: 'string' },
          { name: 'email', type: ['null', 'string'], default: null },
        ],
      },
    },
    {
      name: 'items',
      type: {
        type: 'array',
        items: {
          type: 'record',
          name: 'Item',
          fields: [
            { name: 'sku', type: 'string' },
            // v2 widens int → long: an Avro promotion, so v2 readers read v1 data.
            { name: 'quantity', type: version === 1 ? 'int' : 'long' },
            { name: 'unit_price', type: avroDecimal(10) },
          ],
        },
      },
    },
    { name: 'attributes', type: { type: 'map', values: 'string' } },
    { name: 'total', type: avroDecimal(12) },
    { name: 'currency', type: 'string' },
    { name: 'created_at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'note', type: ['null', 'string'], default: null },
  ];
  // A new field must have a default for v2 to read v1 data (BACKWARD).
  if (version === 2) fields.push({ name: 'channel', type: ['null', 'string'], default: null });
  return { type: 'record', name: ORDER_RECORD, namespace: ORDER_NAMESPACE, doc: 'An order event written by icefloe generate.', fields };
}

/**
 * The Protobuf schema (proto3) of a version. OrderEvent is the file's first message, so its Confluent
 * message-index list is [0]. The enum starts at CREATED = 0 (not an UNSPECIFIED value) so its symbols
 * are exactly Avro's; a proto3 enum without presence then reads CREATED when absent, which is also its
 * encoded default.
 */
export function orderProtobufSchema(version: SchemaVersion): string {
  return `syntax = "proto3";
package ${ORDER_NAMESPACE};

import "google/protobuf/timestamp.proto";

// An order event written by icefloe generate. unit_price and total are unscaled cents (scale 2).
message ${ORDER_RECORD} {
  enum OrderStatus {
    CREATED = 0;
    PAID = 1;
    SHIPPED = 2;
    DELIVERED = 3;
    CANCELLED = 4;
  }
  message Customer {
    int64 id = 1;
    string name = 2;
    optional string email = 3;
  }
  message Item {
    string sku = 1;
    ${version === 1 ? 'int32' : 'int64'} quantity = 2;
    int64 unit_price = 3;
  }
  string order_id = 1;
  string region = 2;
  OrderStatus status = 3;
  Customer customer = 4;
  repeated Item items = 5;
  map<string, string> attributes = 6;
  int64 total = 7;
  string currency = 8;
  google.protobuf.Timestamp created_at = 9;
  optional string note = 10;
${version === 2 ? '  optional string channel = 11;\n' : ''}}
`;
}

/** OrderEvent's path in its .proto file, as Confluent's message-index list. */
export const ORDER_PROTOBUF_MESSAGE_INDEXES: readonly number[] = [0];

const CONNECT_DECIMAL = 'org.apache.kafka.connect.data.Decimal';
const CONNECT_TIMESTAMP = 'org.apache.kafka.connect.data.Timestamp';

function connectDecimal(field: string | undefined, precision: number): Record<string, unknown> {
  return {
    type: 'bytes',
    optional: false,
    name: CONNECT_DECIMAL,
    version: 1,
    parameters: { scale: '2', 'connect.decimal.precision': String(precision) },
    ...(field === undefined ? {} : { field }),
  };
}

/**
 * The Connect schema (JsonConverter's JSON form) of a version, as the `schema` of the envelope. Connect has
 * no enum: `status` is a string. Decimals are Connect Decimal (base64 bytes), `created_at` Connect Timestamp.
 */
export function orderConnectSchema(version: SchemaVersion): Record<string, unknown> {
  const str = (field: string, optional = false): Record<string, unknown> => ({ type: 'string', optional, field });
  const fields: Record<string, unknown>[] = [
    str('order_id'),
    str('region'),
    str('status'),
    {
      type: 'struct',
      optional: false,
      name: `${ORDER_NAMESPACE}.Customer`,
      field: 'customer',
      fields: [{ type: 'int64', optional: false, field: 'id' }, str('name'), str('email', true)],
    },
    {
      type: 'array',
      optional: false,
      field: 'items',
      items: {
        type: 'struct',
        optional: false,
        name: `${ORDER_NAMESPACE}.Item`,
        fields: [str('sku'), { type: version === 1 ? 'int32' : 'int64', optional: false, field: 'quantity' }, connectDecimal('unit_price', 10)],
      },
    },
    { type: 'map', optional: false, field: 'attributes', keys: { type: 'string', optional: false }, values: { type: 'string', optional: false } },
    connectDecimal('total', 12),
    str('currency'),
    { type: 'int64', optional: false, name: CONNECT_TIMESTAMP, version: 1, field: 'created_at' },
    str('note', true),
  ];
  if (version === 2) fields.push(str('channel', true));
  return { type: 'struct', optional: false, name: `${ORDER_NAMESPACE}.${ORDER_RECORD}`, version, fields };
}
