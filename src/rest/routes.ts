/**
 * The endpoints of Kafka Connect's REST API (reference/connect-rest.md §1.4) as routes over `HerderApi`:
 * each reads its parameters and body the way Connect's resources do (ConnectorsResource,
 * ConnectorPluginsResource, LoggingResource, RootResource), calls the herder, and answers with Connect's
 * status code and entity.
 *
 * Also Icefloe's own endpoints under `/connectors/{name}/iceberg/` (docs/rest.md "Iceberg tables"): the
 * table operations of a stopped connector, with bodies checked strictly (400) since no Connect client
 * depends on their error shapes.
 *
 * Owns: what each endpoint does with HTTP (status codes, Location, query parameters, body checks that
 * Connect's resources make before the herder: name vs URL, empty offsets, plugin vs connector.class,
 * logger level, topic tracking switches). Must not: decide anything the herder owns (validation,
 * state), or listen.
 */
import { errorMessage, RequestRefused } from '../core/errors.ts';
import type { ConfigInfos, ConnectorOffsets, HerderApi, TargetState } from '../runtime/herder-api.ts';
import {
  NULL_VALUE_ERROR,
  NumberText,
  booleanParam,
  configMap,
  empty,
  json,
  nullKeys,
  objectBody,
  parseBody,
  stringField,
  withoutNulls,
} from './http.ts';
import type { Reply } from './http.ts';

/** What a route gets: decoded path parameters, the query, the raw body, and the herder call wrapper. */
export interface RouteContext {
  readonly herder: HerderApi;
  readonly params: Readonly<Record<string, string>>;
  /** `:task` parameters, converted (the router answers 404 for one that is not an integer, as Jersey). */
  readonly ints: Readonly<Record<string, number>>;
  readonly query: URLSearchParams;
  readonly body: string;
  /** The absolute URL of a path on this server (for Location), from the request's Host. */
  readonly urlOf: (path: string) => string;
  /** Runs a herder call under the request timeout (90 s: `500 Request timed out`). */
  readonly call: <T>(work: () => T | Promise<T>) => Promise<T>;
  readonly topicTracking: { readonly enabled: boolean; readonly allowReset: boolean };
}

export interface Route {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Segments; `:name` is a string parameter, `#name` an integer one. */
  readonly path: readonly string[];
  /** `/admin/*`: left out when admin.listeners is empty. */
  readonly admin?: boolean;
  /** Resources with `@Consumes(application/json)`: a body of another type is a 415. */
  readonly consumes: boolean;
  readonly handle: (ctx: RouteContext) => Promise<Reply>;
}

const p = (path: string): string[] => path.split('/').filter((s) => s !== '');

/** Connect's check on POST and PUT (ConnectorsResource.checkAndPutConnectorConfigName). */
function checkName(name: string, config: Record<string, string | null>): void {
  const included = config.name;
  if (included !== undefined && included !== null) {
    if (included !== name) throw new RequestRefused('bad-request', `Connector name configuration (${included}) doesn't match connector name in the URL (${name})`);
  } else {
    config.name = name;
  }
}

/** A body that must be there (Jackson hands a missing one to the resource as null, which fails with a 500). */
function requiredBody(ctx: RouteContext, what: string): unknown {
  const body = parseBody(ctx.body);
  if (body === undefined || body === null) throw new RequestRefused('failed', `The request has no body: expected ${what}`);
  return body;
}

const INITIAL_STATES: Readonly<Record<string, TargetState>> = { RUNNING: 'STARTED', PAUSED: 'PAUSED', STOPPED: 'STOPPED' };

/** Characters a URI path keeps as they are (RFC 3986 sub-delims, ':', '@', '/'), which encodeURIComponent escapes. */
const PATH_KEEPS: Readonly<Record<string, string>> = { '%24': '$', '%26': '&', '%2B': '+', '%2C': ',', '%3B': ';', '%3D': '=', '%3A': ':', '%40': '@', '%2F': '/' };

/**
 * `Location: /connectors/<name>`, absolute as JAX-RS resolves it against the request's base URI, the
 * name encoded as UriBuilder.path does (`a b->c` → `a%20b-%3Ec`).
 */
function connectorLocation(ctx: RouteContext, name: string): Record<string, string> {
  const path = encodeURIComponent(name).replace(/%(24|26|2B|2C|3B|3D|3A|40|2F)/gi, (m) => PATH_KEEPS[m.toUpperCase()] ?? m);
  return { location: ctx.urlOf(`/connectors/${path}`) };
}

async function createConnector(ctx: RouteContext): Promise<Reply> {
  const body = objectBody(requiredBody(ctx, '{"name": ..., "config": {...}}'), 'org.apache.kafka.connect.runtime.rest.entities.CreateConnectorRequest');
  // Trimmed, and "" when absent, so the herder's validation names the problem (as Connect).
  const name = (stringField(body, 'name') ?? '').trim();
  if (body.config === undefined || body.config === null) throw new RequestRefused('failed', 'The create request has no "config" object');
  const config = configMap(body.config);
  const rawState = stringField(body, 'initial_state');
  let initial: TargetState = 'STARTED';
  if (rawState !== undefined) {
    const state = INITIAL_STATES[rawState.toUpperCase()];
    // Jackson fails to build the enum, which Connect answers with 500 (observed on 4.3.1).
    if (state === undefined) throw new RequestRefused('failed', `Cannot construct instance of \`InitialState\`, problem: No enum constant ${rawState.toUpperCase()}: initial_state is RUNNING, PAUSED or STOPPED (any case)`);
    initial = state;
  }
  checkName(name, config);
  const values = withoutNulls(config);
  const info = await ctx.call(() => ctx.herder.createConnector(name, values, initial));
  return json(201, info, connectorLocation(ctx, name));
}

async function listConnectors(ctx: RouteContext): Promise<Reply> {
  const names = await ctx.call(() => ctx.herder.connectorNames());
  if (!ctx.query.has('expand')) return json(200, names);
  // Each value is one expansion: `status,info` is no known expansion, so such a connector maps to {}.
  const expansions = ctx.query.getAll('expand');
  const out: Record<string, Record<string, unknown>> = {};
  for (const name of names) {
    try {
      const entry: Record<string, unknown> = {};
      for (const e of expansions) {
        if (e === 'status') entry.status = ctx.herder.connectorStatus(name);
        else if (e === 'info') entry.info = ctx.herder.connectorInfo(name);
      }
      out[name] = entry;
    } catch (e) {
      // A connector with no status yet (or deleted meanwhile) is left out, as Connect does.
      if (!(e instanceof RequestRefused && e.refusal === 'not-found')) throw e;
    }
  }
  return json(200, out);
}

async function putConfig(ctx: RouteContext): Promise<Reply> {
  const name = ctx.params.connector as string;
  const config = configMap(requiredBody(ctx, 'a JSON object of config values'));
  checkName(name, config);
  const values = withoutNulls(config);
  const r = await ctx.call(() => ctx.herder.putConnectorConfig(name, values));
  return r.created ? json(201, r.info, connectorLocation(ctx, name)) : json(200, r.info);
}

async function patchConfig(ctx: RouteContext): Promise<Reply> {
  const name = ctx.params.connector as string;
  const patch = configMap(requiredBody(ctx, 'a JSON object of config values (null deletes a key)'));
  // Connect does not look at `name` on PATCH; renaming a connector through its config is refused here.
  const newName = patch.name;
  if (newName !== undefined && newName !== null && newName !== name) {
    throw new RequestRefused('bad-request', `Connector name configuration (${newName}) doesn't match connector name in the URL (${name})`);
  }
  const info = await ctx.call(() => ctx.herder.patchConnectorConfig(name, patch));
  return json(200, info);
}

async function restartConnector(ctx: RouteContext): Promise<Reply> {
  const includeTasks = booleanParam(ctx.query, 'includeTasks', false);
  const onlyFailed = booleanParam(ctx.query, 'onlyFailed', false);
  const plan = await ctx.call(() => ctx.herder.restartConnector(ctx.params.connector as string, { includeTasks, onlyFailed }));
  // Both false: Connect's legacy restart of the connector instance only, 204 with no body.
  if (!includeTasks && !onlyFailed) return empty(204);
  return plan === undefined ? empty(202) : json(202, plan);
}

/** An integer the way Connect's sink offsets parser takes one (`Long.parseLong(String.valueOf(v))`). */
function offsetInteger(v: unknown, bits: 32 | 64): number | undefined {
  const text = v instanceof NumberText ? v.text : typeof v === 'string' ? v : undefined;
  if (text === undefined || !/^[+-]?\d+$/.test(text)) return undefined;
  const n = BigInt(text);
  const limit = bits === 32 ? 2n ** 31n : 2n ** 63n;
  return n >= -limit && n < limit ? Number(n) : undefined;
}

function shown(v: unknown): string {
  return v instanceof NumberText ? v.text : typeof v === 'string' ? v : JSON.stringify(v);
}

/** The PATCH body as ConnectorOffsets, with Connect's messages (SinkUtils.parseSinkConnectorOffsets). */
function parseOffsets(body: unknown): ConnectorOffsets {
  const list = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>).offsets : undefined;
  if (!Array.isArray(list) || list.length === 0) throw new RequestRefused('bad-request', 'Partitions / offsets need to be provided for an alter offsets request');
  const offsets: ConnectorOffsets['offsets'][number][] = [];
  for (const item of list as unknown[]) {
    const entry = typeof item === 'object' && item !== null ? (item as Record<string, unknown>) : {};
    const partition = entry.partition;
    if (typeof partition !== 'object' || partition === null) throw new RequestRefused('bad-request', 'The partition for a sink connector offset cannot be null or missing');
    const pm = partition as Record<string, unknown>;
    if (!('kafka_topic' in pm) || !('kafka_partition' in pm)) {
      throw new RequestRefused('bad-request', "The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'");
    }
    if (pm.kafka_topic === null) throw new RequestRefused('bad-request', 'Kafka topic names must be valid strings and may not be null');
    if (pm.kafka_partition === null) throw new RequestRefused('bad-request', 'Kafka partitions must be valid numbers and may not be null');
    const kafkaPartition = offsetInteger(pm.kafka_partition, 32);
    if (kafkaPartition === undefined) {
      throw new RequestRefused('bad-request', `Failed to parse the following Kafka partition value in the provided offsets: '${shown(pm.kafka_partition)}'. Partition values for sink connectors need to be integers.`);
    }
    const topic = shown(pm.kafka_topic);
    const offset = entry.offset;
    if (offset === null || offset === undefined) {
      offsets.push({ partition: { kafka_topic: topic, kafka_partition: kafkaPartition }, offset: null });
      continue;
    }
    const om = typeof offset === 'object' ? (offset as Record<string, unknown>) : {};
    if (!('kafka_offset' in om)) throw new RequestRefused('bad-request', "The offset for a sink connector should either be null or contain the key 'kafka_offset'");
    const kafkaOffset = offsetInteger(om.kafka_offset, 64);
    if (kafkaOffset === undefined) {
      throw new RequestRefused('bad-request', `Failed to parse the following Kafka offset value in the provided offsets: '${shown(om.kafka_offset)}'. Offset values for sink connectors need to be integers.`);
    }
    offsets.push({ partition: { kafka_topic: topic, kafka_partition: kafkaPartition }, offset: { kafka_offset: kafkaOffset } });
  }
  return { offsets };
}

async function alterOffsets(ctx: RouteContext): Promise<Reply> {
  const name = ctx.params.connector as string;
  let offsets: ConnectorOffsets;
  try {
    offsets = parseOffsets(requiredBody(ctx, '{"offsets": [...]}'));
  } catch (e) {
    // Connect looks the connector up before it reads the partitions: an unknown one is a 404 first.
    if (e instanceof RequestRefused && e.refusal === 'bad-request' && !e.message.startsWith('Partitions / offsets')) await ctx.call(() => ctx.herder.connectorInfo(name));
    throw e;
  }
  const message = await ctx.call(() => ctx.herder.alterConnectorOffsets(name, offsets));
  return json(200, { message });
}

function requireTracking(ctx: RouteContext, reset: boolean): void {
  if (!ctx.topicTracking.enabled) throw new RequestRefused('forbidden', 'Topic tracking is disabled.');
  if (reset && !ctx.topicTracking.allowReset) throw new RequestRefused('forbidden', 'Topic tracking reset is disabled.');
}

/** Connect's plugin alias rule: a trailing "Connector" is dropped, then the class must end with the path's name. */
function normalizedPluginName(name: string): string {
  return name.endsWith('Connector') && name.length > 'Connector'.length ? name.slice(0, -'Connector'.length) : name;
}

async function validate(ctx: RouteContext): Promise<Reply> {
  const plugin = ctx.params.plugin as string;
  const config = configMap(requiredBody(ctx, 'a JSON object of config values'));
  const included = config['connector.class'];
  if (included !== undefined && included !== null && !normalizedPluginName(included).endsWith(normalizedPluginName(plugin))) {
    throw new RequestRefused('bad-request', `Included connector type ${included} does not match request type ${plugin}`);
  }
  const nulls = nullKeys(config);
  const values: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) if (v !== null) values[k] = v;
  const infos = await ctx.call(() => ctx.herder.validateConfig(plugin, values));
  return json(200, nulls.length === 0 ? infos : withNullErrors(infos, nulls));
}

/** Connect reports a null value as an error on that key (AbstractHerder.validateConnectorConfig); the herder never sees nulls. */
function withNullErrors(infos: ConfigInfos, nulls: readonly string[]): ConfigInfos {
  const configs = infos.configs.map((c) => ({ definition: c.definition, value: { ...c.value, errors: [...c.value.errors] } }));
  for (const key of nulls) {
    const found = configs.find((c) => c.value.name === key || c.definition?.name === key);
    if (found !== undefined) {
      found.value.value = null;
      found.value.errors.push(NULL_VALUE_ERROR);
    } else {
      configs.push({ definition: null, value: { name: key, value: null, recommended_values: [], errors: [NULL_VALUE_ERROR], visible: true } });
    }
  }
  return { ...infos, error_count: infos.error_count + nulls.length, configs };
}

/** log4j's level names (Level.toLevel): anything else is Connect's 404 "invalid log level". */
const LOG4J_LEVELS = ['OFF', 'FATAL', 'ERROR', 'WARN', 'INFO', 'DEBUG', 'TRACE', 'ALL'];

async function setLoggerLevel(ctx: RouteContext): Promise<Reply> {
  const body = configMap(requiredBody(ctx, '{"level": "..."}'));
  const level = body.level;
  if (level === undefined || level === null) throw new RequestRefused('bad-request', "Desired 'level' parameter was not specified in request.");
  if (!LOG4J_LEVELS.includes(level.toUpperCase())) throw new RequestRefused('not-found', `invalid log level '${level}'.`);
  // Unknown scopes fall back to the worker, as Connect does (with a warning there).
  const scope = (ctx.query.get('scope') ?? 'worker').toLowerCase() === 'cluster' ? 'cluster' : 'worker';
  const changed = await ctx.call(() => ctx.herder.setLoggerLevel(ctx.params.logger as string, level, scope));
  return scope === 'cluster' ? empty(204) : json(200, changed);
}

/**
 * The body of an Icefloe extension endpoint: an object with only the `allowed` fields. Anything else is a
 * 400 (ours, not Connect's 500 for Jackson's errors): a misspelt field must not run the operation without it.
 * An unknown connector is the 404 first, as for the offsets.
 */
async function extensionBody(ctx: RouteContext, allowed: readonly string[], required: boolean): Promise<Record<string, unknown>> {
  const name = ctx.params.connector as string;
  const bad = async (message: string): Promise<never> => {
    await ctx.call(() => ctx.herder.connectorInfo(name));
    throw new RequestRefused('bad-request', message);
  };
  let body: unknown;
  try {
    body = parseBody(ctx.body);
  } catch (e) {
    return bad(errorMessage(e));
  }
  if (body === undefined && !required) return {};
  const fields = allowed.map((f) => `"${f}"`).join(', ');
  if (typeof body !== 'object' || body === null || Array.isArray(body) || body instanceof NumberText) return bad(`The request body must be a JSON object with ${fields}`);
  const unknown = Object.keys(body).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) return bad(`Unknown field(s) ${unknown.map((f) => `"${f}"`).join(', ')}: the request body takes ${fields}`);
  return body as Record<string, unknown>;
}

/** A snapshot id: a 64-bit integer as a JSON number (its text kept: no digits lost) or a string. */
function snapshotIdOf(v: unknown): bigint | undefined {
  const text = v instanceof NumberText ? v.text : typeof v === 'string' ? v.trim() : undefined;
  if (text === undefined || !/^-?\d+$/.test(text)) return undefined;
  const n = BigInt(text);
  return n >= -(2n ** 63n) && n < 2n ** 63n ? n : undefined;
}

async function replayTable(ctx: RouteContext): Promise<Reply> {
  const name = ctx.params.connector as string;
  const body = await extensionBody(ctx, ['snapshot_id'], true);
  const snapshotId = snapshotIdOf(body.snapshot_id);
  if (snapshotId === undefined) {
    await ctx.call(() => ctx.herder.connectorInfo(name));
    throw new RequestRefused('bad-request', `"snapshot_id" must be a snapshot id (a 64-bit integer, as a string or a number), not ${body.snapshot_id === undefined ? 'missing' : shown(body.snapshot_id)}`);
  }
  return json(200, await ctx.call(() => ctx.herder.replayTable(name, ctx.params.table as string, snapshotId)));
}

async function adoptTable(ctx: RouteContext): Promise<Reply> {
  const name = ctx.params.connector as string;
  const body = await extensionBody(ctx, ['holds_group_offsets'], false);
  const holds = body.holds_group_offsets;
  if (holds !== undefined && typeof holds !== 'boolean') {
    await ctx.call(() => ctx.herder.connectorInfo(name));
    throw new RequestRefused('bad-request', `"holds_group_offsets" must be true or false, not ${shown(holds)}`);
  }
  return json(200, await ctx.call(() => ctx.herder.adoptTable(name, ctx.params.table as string, { holdsGroupOffsets: holds === true })));
}

const C = '/connectors/:connector';

export const ROUTES: readonly Route[] = [
  { method: 'GET', path: [], consumes: false, handle: async (ctx) => json(200, await ctx.call(() => ctx.herder.serverInfo())) },
  // GET /health is answered by the server itself (its own 10 s timeout and status codes).
  { method: 'GET', path: p('/connectors'), consumes: true, handle: listConnectors },
  { method: 'POST', path: p('/connectors'), consumes: true, handle: createConnector },
  { method: 'GET', path: p(C), consumes: true, handle: async (ctx) => json(200, await ctx.call(() => ctx.herder.connectorInfo(ctx.params.connector as string))) },
  {
    method: 'DELETE', path: p(C), consumes: true,
    handle: async (ctx) => (await ctx.call(() => ctx.herder.deleteConnector(ctx.params.connector as string)), empty(204)),
  },
  { method: 'GET', path: p(`${C}/config`), consumes: true, handle: async (ctx) => json(200, await ctx.call(() => ctx.herder.connectorConfig(ctx.params.connector as string))) },
  { method: 'PUT', path: p(`${C}/config`), consumes: true, handle: putConfig },
  { method: 'PATCH', path: p(`${C}/config`), consumes: true, handle: patchConfig },
  { method: 'GET', path: p(`${C}/status`), consumes: true, handle: async (ctx) => json(200, await ctx.call(() => ctx.herder.connectorStatus(ctx.params.connector as string))) },
  { method: 'GET', path: p(`${C}/tasks`), consumes: true, handle: async (ctx) => json(200, await ctx.call(() => ctx.herder.taskConfigs(ctx.params.connector as string))) },
  {
    method: 'GET', path: p(`${C}/tasks/#task/status`), consumes: true,
    handle: async (ctx) => json(200, await ctx.call(() => ctx.herder.taskStatus(ctx.params.connector as string, ctx.ints.task as number))),
  },
  { method: 'POST', path: p(`${C}/restart`), consumes: true, handle: restartConnector },
  {
    method: 'POST', path: p(`${C}/tasks/#task/restart`), consumes: true,
    handle: async (ctx) => (await ctx.call(() => ctx.herder.restartTask(ctx.params.connector as string, ctx.ints.task as number)), empty(204)),
  },
  { method: 'PUT', path: p(`${C}/pause`), consumes: true, handle: async (ctx) => (await ctx.call(() => ctx.herder.pauseConnector(ctx.params.connector as string)), empty(202)) },
  { method: 'PUT', path: p(`${C}/resume`), consumes: true, handle: async (ctx) => (await ctx.call(() => ctx.herder.resumeConnector(ctx.params.connector as string)), empty(202)) },
  { method: 'PUT', path: p(`${C}/stop`), consumes: true, handle: async (ctx) => (await ctx.call(() => ctx.herder.stopConnector(ctx.params.connector as string)), empty(204)) },
  { method: 'GET', path: p(`${C}/offsets`), consumes: true, handle: async (ctx) => json(200, await ctx.call(() => ctx.herder.connectorOffsets(ctx.params.connector as string))) },
  { method: 'PATCH', path: p(`${C}/offsets`), consumes: true, handle: alterOffsets },
  {
    method: 'DELETE', path: p(`${C}/offsets`), consumes: true,
    handle: async (ctx) => json(200, { message: await ctx.call(() => ctx.herder.resetConnectorOffsets(ctx.params.connector as string)) }),
  },
  {
    method: 'GET', path: p(`${C}/topics`), consumes: true,
    handle: async (ctx) => (requireTracking(ctx, false), json(200, await ctx.call(() => ctx.herder.activeTopics(ctx.params.connector as string)))),
  },
  {
    method: 'PUT', path: p(`${C}/topics/reset`), consumes: true,
    handle: async (ctx) => (requireTracking(ctx, true), await ctx.call(() => ctx.herder.resetActiveTopics(ctx.params.connector as string)), empty(202)),
  },
  // Icefloe extensions (docs/rest.md "Iceberg tables"): not in Kafka Connect's API.
  { method: 'GET', path: p(`${C}/iceberg/tables`), consumes: true, handle: async (ctx) => json(200, await ctx.call(() => ctx.herder.icebergTables(ctx.params.connector as string))) },
  { method: 'POST', path: p(`${C}/iceberg/tables/:table/replay`), consumes: true, handle: replayTable },
  { method: 'POST', path: p(`${C}/iceberg/tables/:table/adopt`), consumes: true, handle: adoptTable },
  {
    method: 'GET', path: p('/connector-plugins'), consumes: true,
    handle: async (ctx) => json(200, await ctx.call(() => ctx.herder.plugins(booleanParam(ctx.query, 'connectorsOnly', true)))),
  },
  { method: 'GET', path: p('/connector-plugins/:plugin/config'), consumes: true, handle: async (ctx) => json(200, await ctx.call(() => ctx.herder.pluginConfig(ctx.params.plugin as string))) },
  { method: 'PUT', path: p('/connector-plugins/:plugin/config/validate'), consumes: true, handle: validate },
  { method: 'GET', path: p('/admin/loggers'), admin: true, consumes: true, handle: async (ctx) => json(200, await ctx.call(() => ctx.herder.loggers())) },
  { method: 'GET', path: p('/admin/loggers/:logger'), admin: true, consumes: true, handle: async (ctx) => json(200, await ctx.call(() => ctx.herder.logger(ctx.params.logger as string))) },
  { method: 'PUT', path: p('/admin/loggers/:logger'), admin: true, consumes: true, handle: setLoggerLevel },
];
