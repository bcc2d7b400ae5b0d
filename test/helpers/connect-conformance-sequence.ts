/**
 * The request sequence of the REST conformance suite (issue 12): every endpoint of the Kafka Connect
 * REST API and the error cases of docs/reference/connect-rest.md §1.2, in an order that walks a connector
 * through its states. Each step may first wait (not recorded) for an asynchronous state change, e.g. a
 * pause to show in the status, so that both workers are asked the same question in the same state.
 * What the reference worker answered to each step is in docs/design/rest-conformance.md.
 */
import type { Role, RunContext, Step } from './connect-conformance.ts';
import { poll, waitForGone, waitForOffsets, waitForState, waitForTopics } from './connect-conformance.ts';

type Opts = Omit<Step, 'id' | 'title' | 'method' | 'path'>;

function step(id: string, title: string, method: string, path: (ctx: RunContext) => string, opts: Opts = {}): Step {
  return { id, title, method, path, ...opts };
}

const c = (role: Role, rest = ''): ((ctx: RunContext) => string) => (ctx) => `/connectors/${ctx.enc(role)}${rest}`;
const at = (p: string): (() => string) => () => p;
const create = (role: Role, extra: Record<string, unknown> = {}) => (ctx: RunContext) => ({ name: ctx.names[role], config: ctx.side.validConfig(ctx.topic, ctx.names[role]), ...extra });
const plugin = (ctx: RunContext): string => `/connector-plugins/${encodeURIComponent(ctx.side.connectorClass)}`;
const running = (role: Role) => (ctx: RunContext) => waitForState(ctx, role, 'RUNNING', 1);
const INFO = { dicts: ['config'] };
const simpleName = (ctx: RunContext): string => ctx.side.connectorClass.slice(ctx.side.connectorClass.lastIndexOf('.') + 1);
const withoutClass = (config: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(config).filter(([k]) => k !== 'connector.class'));
/** The records the suite's topic holds before the sequence (test/e2e/rest-conformance.test.ts produces them). */
export const RECORDS = 5;
const offsetsAt = (offset: number) => (ctx: RunContext): unknown => ({ offsets: [{ partition: { kafka_topic: ctx.topic, kafka_partition: 0 }, offset: { kafka_offset: offset } }] });
const offsetsPatch = offsetsAt(1);

/** The routes of one connector, each asked for a connector that does not exist. */
function unknownConnectorSteps(): Step[] {
  const m: Role = 'missing';
  return [
    step('unknown-get', 'GET an unknown connector', 'GET', c(m)),
    step('unknown-config', 'GET the config of an unknown connector', 'GET', c(m, '/config')),
    step('unknown-patch-config', 'PATCH the config of an unknown connector', 'PATCH', c(m, '/config'), { body: () => ({ 'tasks.max': '1' }) }),
    step('unknown-status', 'GET the status of an unknown connector', 'GET', c(m, '/status')),
    step('unknown-tasks', 'GET the tasks of an unknown connector', 'GET', c(m, '/tasks')),
    step('unknown-task-status', 'GET task 0 status of an unknown connector', 'GET', c(m, '/tasks/0/status')),
    step('unknown-restart', 'restart an unknown connector', 'POST', c(m, '/restart')),
    step('unknown-restart-tasks', 'restart an unknown connector with includeTasks', 'POST', c(m, '/restart?includeTasks=true&onlyFailed=false')),
    step('unknown-task-restart', 'restart task 0 of an unknown connector', 'POST', c(m, '/tasks/0/restart')),
    step('unknown-pause', 'pause an unknown connector', 'PUT', c(m, '/pause')),
    step('unknown-resume', 'resume an unknown connector', 'PUT', c(m, '/resume')),
    step('unknown-stop', 'stop an unknown connector', 'PUT', c(m, '/stop')),
    step('unknown-delete', 'DELETE an unknown connector', 'DELETE', c(m)),
    step('unknown-offsets', 'GET the offsets of an unknown connector', 'GET', c(m, '/offsets')),
    step('unknown-offsets-patch', 'PATCH the offsets of an unknown connector', 'PATCH', c(m, '/offsets'), { body: offsetsPatch }),
    step('unknown-offsets-delete', 'DELETE the offsets of an unknown connector', 'DELETE', c(m, '/offsets')),
    step('unknown-topics', 'GET the active topics of an unknown connector', 'GET', c(m, '/topics'), { connectorKeyed: [''] }),
    step('unknown-topics-reset', 'reset the active topics of an unknown connector', 'PUT', c(m, '/topics/reset')),
  ];
}

function serverAndPluginSteps(): Step[] {
  return [
    step('root', 'GET / (version, commit, kafka_cluster_id)', 'GET', at('/')),
    step('health', 'GET /health', 'GET', at('/health')),
    step('plugins', 'GET /connector-plugins', 'GET', at('/connector-plugins')),
    step('plugins-trailing-slash', 'GET /connector-plugins/ (trailing slash)', 'GET', at('/connector-plugins/')),
    step('plugins-all', 'GET /connector-plugins?connectorsOnly=false', 'GET', at('/connector-plugins?connectorsOnly=false')),
    step('plugin-config', 'GET the config definitions of the connector plugin', 'GET', (ctx) => `${plugin(ctx)}/config`),
    step('plugin-config-simple-name', 'GET the config definitions by the simple class name', 'GET', (ctx) => `/connector-plugins/${simpleName(ctx)}/config`),
    step('plugin-config-unknown', 'GET the config definitions of an unknown plugin', 'GET', at('/connector-plugins/org.example.NoSuchConnector/config')),
    step('validate-valid', 'validate a valid config', 'PUT', (ctx) => `${plugin(ctx)}/config/validate`, {
      body: (ctx) => ({ 'connector.class': ctx.side.connectorClass, name: ctx.names.main, ...ctx.side.validConfig(ctx.topic, ctx.names.main) }),
    }),
    step('validate-invalid', 'validate an invalid config (200, error_count > 0)', 'PUT', (ctx) => `${plugin(ctx)}/config/validate`, {
      body: (ctx) => ({ name: ctx.names.main, ...ctx.side.invalidConfig(ctx.topic, ctx.names.main) }),
    }),
    step('validate-simple-name', 'validate with the simple class name in the path', 'PUT', (ctx) => `/connector-plugins/${simpleName(ctx)}/config/validate`, {
      body: (ctx) => ({ ...ctx.side.validConfig(ctx.topic, ctx.names.main), name: ctx.names.main }),
    }),
    step('validate-class-mismatch', 'validate with connector.class different from the path plugin', 'PUT', (ctx) => `${plugin(ctx)}/config/validate`, {
      body: (ctx) => ({ ...ctx.side.validConfig(ctx.topic, ctx.names.main), 'connector.class': 'org.example.OtherConnector', name: ctx.names.main }),
    }),
    step('validate-no-class', 'validate a config without connector.class', 'PUT', (ctx) => `${plugin(ctx)}/config/validate`, {
      body: (ctx) => ({ ...withoutClass(ctx.side.validConfig(ctx.topic, ctx.names.main)), name: ctx.names.main }),
    }),
  ];
}

function createSteps(): Step[] {
  return [
    step('list-empty', 'GET /connectors before this run created any', 'GET', at('/connectors'), { connectorList: true }),
    step('create-invalid', 'POST a connector whose config is invalid', 'POST', at('/connectors'), { body: (ctx) => ({ name: ctx.names.probe, config: ctx.side.invalidConfig(ctx.topic, ctx.names.probe) }) }),
    step('create-no-class', 'POST a connector without connector.class', 'POST', at('/connectors'), {
      body: (ctx) => ({ name: ctx.names.probe, config: withoutClass(ctx.side.validConfig(ctx.topic, ctx.names.probe)) }),
    }),
    step('create-unknown-class', 'POST a connector whose connector.class does not exist', 'POST', at('/connectors'), {
      body: (ctx) => ({ name: ctx.names.probe, config: { ...ctx.side.validConfig(ctx.topic, ctx.names.probe), 'connector.class': 'org.example.NoSuchConnector' } }),
    }),
    step('create-name-mismatch', 'POST with config.name different from name', 'POST', at('/connectors'), {
      body: (ctx) => ({ name: ctx.names.probe, config: { ...ctx.side.validConfig(ctx.topic, ctx.names.probe), name: `${ctx.names.probe}-other` } }),
    }),
    step('create-no-name', 'POST without name', 'POST', at('/connectors'), { body: (ctx) => ({ config: ctx.side.validConfig(ctx.topic, ctx.names.probe) }) }),
    step('create-no-config', 'POST without config', 'POST', at('/connectors'), { body: (ctx) => ({ name: ctx.names.probe }) }),
    step('create-null-value', 'POST with a null config value', 'POST', at('/connectors'), {
      body: (ctx) => ({ name: ctx.names.probe, config: { ...ctx.side.validConfig(ctx.topic, ctx.names.probe), 'errors.log.enable': null } }),
    }),
    step('create-bad-initial-state', 'POST with initial_state BOGUS', 'POST', at('/connectors'), { body: create('probe', { initial_state: 'BOGUS' }) }),
    step('create-bad-json', 'POST malformed JSON', 'POST', at('/connectors'), { rawBody: '{"name": "x", "config": {' }),
    step('create-wrong-content-type', 'POST a valid body as text/plain', 'POST', at('/connectors'), {
      body: create('probe'),
      contentType: 'text/plain',
    }),
    step('create-form-content-type', "POST a valid body as curl's default (form-urlencoded)", 'POST', at('/connectors'), {
      body: create('probe'),
      contentType: 'application/x-www-form-urlencoded',
    }),
    step('create', 'POST a valid connector (201, Location)', 'POST', at('/connectors'), { body: create('main'), ...INFO }),
    step('create-exists', 'POST the same connector again (409)', 'POST', at('/connectors'), { body: create('main'), before: running('main') }),
    step('create-paused', 'POST with initial_state PAUSED', 'POST', at('/connectors'), { body: create('paused', { initial_state: 'PAUSED' }), ...INFO }),
    step('create-stopped', 'POST with initial_state STOPPED', 'POST', at('/connectors'), { body: create('stopped', { initial_state: 'STOPPED' }), ...INFO }),
    step('put-create', 'PUT the config of a new connector whose name needs percent-encoding (201)', 'PUT', c('odd', '/config'), {
      body: (ctx) => ctx.side.validConfig(ctx.topic, ctx.names.odd),
      ...INFO,
    }),
  ];
}

function readSteps(): Step[] {
  return [
    step('status-percent-encoded', 'GET the status of the percent-encoded name', 'GET', c('odd', '/status'), { before: running('odd') }),
    step('get-percent-encoded', 'GET the connector of the percent-encoded name', 'GET', c('odd'), INFO),
    step('status-paused-initial', 'GET the status of the connector created PAUSED', 'GET', c('paused', '/status'), { before: (ctx) => waitForState(ctx, 'paused', 'PAUSED') }),
    step('status-stopped-initial', 'GET the status of the connector created STOPPED', 'GET', c('stopped', '/status'), { before: (ctx) => waitForState(ctx, 'stopped', 'STOPPED', 0) }),
    step('get-stopped-initial', 'GET the connector created STOPPED (no tasks)', 'GET', c('stopped'), INFO),
    step('list', 'GET /connectors', 'GET', at('/connectors'), { connectorList: true }),
    step('list-trailing-slash', 'GET /connectors/ (trailing slash)', 'GET', at('/connectors/'), { connectorList: true }),
    step('list-unknown-param', 'GET /connectors?search=x (unknown query parameter)', 'GET', at('/connectors?search=x'), { connectorList: true }),
    step('expand-status', 'GET /connectors?expand=status', 'GET', at('/connectors?expand=status'), { connectorKeyed: [''] }),
    step('expand-info', 'GET /connectors?expand=info', 'GET', at('/connectors?expand=info'), { connectorKeyed: [''], dicts: ['*.info.config'] }),
    step('expand-both', 'GET /connectors?expand=status&expand=info (repeated expand)', 'GET', at('/connectors?expand=status&expand=info'), {
      connectorKeyed: [''],
      dicts: ['*.info.config'],
    }),
    step('expand-comma', 'GET /connectors?expand=status,info (comma-joined: not split)', 'GET', at('/connectors?expand=status,info'), { connectorKeyed: [''] }),
    step('expand-unknown', 'GET /connectors?expand=nope', 'GET', at('/connectors?expand=nope'), { connectorKeyed: [''] }),
    step('get', 'GET /connectors/{c}', 'GET', c('main'), INFO),
    step('get-trailing-slash', 'GET /connectors/{c}/ (trailing slash)', 'GET', c('main', '/'), INFO),
    step('config', 'GET /connectors/{c}/config', 'GET', c('main', '/config'), { dicts: [''] }),
    step('status', 'GET /connectors/{c}/status', 'GET', c('main', '/status')),
    step('status-trailing-slash', 'GET /connectors/{c}/status/ (trailing slash)', 'GET', c('main', '/status/')),
    step('tasks', 'GET /connectors/{c}/tasks', 'GET', c('main', '/tasks'), { dicts: ['[].config'] }),
    step('task-status', 'GET /connectors/{c}/tasks/0/status', 'GET', c('main', '/tasks/0/status')),
    step('tasks-config', 'GET /connectors/{c}/tasks-config (removed in Kafka 4.0, KIP-970)', 'GET', c('main', '/tasks-config')),
    step('task-status-unknown', 'GET the status of task 9 (does not exist)', 'GET', c('main', '/tasks/9/status')),
    step('task-status-not-a-number', 'GET the status of task "x"', 'GET', c('main', '/tasks/x/status')),
    step('topics', 'GET /connectors/{c}/topics', 'GET', c('main', '/topics'), { before: (ctx) => waitForTopics(ctx, 'main'), connectorKeyed: [''] }),
    step('offsets-running', 'GET /connectors/{c}/offsets while RUNNING', 'GET', c('main', '/offsets'), { before: (ctx) => waitForOffsets(ctx, 'main') }),
  ];
}

function configWriteSteps(): Step[] {
  const cfg = (ctx: RunContext): Record<string, unknown> => ctx.side.validConfig(ctx.topic, ctx.names.main);
  return [
    step('put-update', 'PUT the config of an existing connector (200)', 'PUT', c('main', '/config'), { body: (ctx) => ({ ...cfg(ctx), 'errors.log.enable': 'true' }), ...INFO }),
    step('put-json-number', 'PUT with tasks.max as a JSON number and a boolean value', 'PUT', c('main', '/config'), {
      body: (ctx) => ({ ...cfg(ctx), 'tasks.max': 1, 'errors.log.enable': true }),
      ...INFO,
    }),
    step('config-after-number', 'GET the config after the JSON number (stored as strings)', 'GET', c('main', '/config'), { dicts: [''] }),
    step('put-name-mismatch', 'PUT a config whose name differs from the URL', 'PUT', c('main', '/config'), { body: (ctx) => ({ ...cfg(ctx), name: `${ctx.names.main}-other` }) }),
    step('put-invalid', 'PUT an invalid config', 'PUT', c('main', '/config'), { body: (ctx) => ctx.side.invalidConfig(ctx.topic, ctx.names.main) }),
    step('put-no-class', 'PUT a config without connector.class', 'PUT', c('main', '/config'), {
      body: (ctx) => withoutClass(ctx.side.validConfig(ctx.topic, ctx.names.main)),
    }),
    step('put-null-value', 'PUT a config with a null value', 'PUT', c('main', '/config'), { body: (ctx) => ({ ...cfg(ctx), 'errors.log.enable': null }) }),
    step('put-bad-json', 'PUT malformed JSON', 'PUT', c('main', '/config'), { rawBody: '{"connector.class": ' }),
    step('put-wrong-content-type', 'PUT a valid config as text/plain', 'PUT', c('main', '/config'), { body: cfg, contentType: 'text/plain' }),
    step('put-nested-value', 'PUT a config with a nested object value', 'PUT', c('main', '/config'), { body: (ctx) => ({ ...cfg(ctx), 'errors.log.enable': { nested: true } }) }),
    step('patch-config', 'PATCH the config: set one key, remove one with null (200)', 'PATCH', c('main', '/config'), {
      body: () => ({ 'errors.tolerance': 'all', 'errors.log.enable': null }),
      ...INFO,
    }),
    step('patch-config-invalid', 'PATCH the config to an invalid value', 'PATCH', c('main', '/config'), { body: () => ({ 'tasks.max': 'many' }) }),
    step('config-after-patch', 'GET the config after the PATCH', 'GET', c('main', '/config'), { dicts: [''], before: running('main') }),
  ];
}

function stateSteps(): Step[] {
  return [
    step('offsets-patch-running', 'PATCH offsets while RUNNING (400)', 'PATCH', c('main', '/offsets'), { body: offsetsPatch }),
    step('offsets-delete-running', 'DELETE offsets while RUNNING (400)', 'DELETE', c('main', '/offsets')),
    step('pause', 'PUT /pause (202)', 'PUT', c('main', '/pause')),
    step('status-paused', 'GET the status once PAUSED', 'GET', c('main', '/status'), { before: (ctx) => waitForState(ctx, 'main', 'PAUSED', 1) }),
    step('pause-again', 'PUT /pause again (idempotent)', 'PUT', c('main', '/pause')),
    step('offsets-patch-paused', 'PATCH offsets while PAUSED (400)', 'PATCH', c('main', '/offsets'), { body: offsetsPatch }),
    step('resume', 'PUT /resume (202)', 'PUT', c('main', '/resume')),
    step('status-resumed', 'GET the status once RUNNING again', 'GET', c('main', '/status'), { before: running('main') }),
    step('restart', 'POST /restart without parameters (204)', 'POST', c('main', '/restart')),
    step('restart-include-tasks', 'POST /restart?includeTasks=true (202 with the plan)', 'POST', c('main', '/restart?includeTasks=true'), { before: running('main') }),
    step('restart-only-failed', 'POST /restart?includeTasks=true&onlyFailed=true (nothing failed)', 'POST', c('main', '/restart?includeTasks=true&onlyFailed=true'), {
      before: running('main'),
    }),
    step('restart-only-failed-connector', 'POST /restart?onlyFailed=true', 'POST', c('main', '/restart?onlyFailed=true'), { before: running('main') }),
    step('restart-explicit-false', 'POST /restart?includeTasks=false&onlyFailed=false', 'POST', c('main', '/restart?includeTasks=false&onlyFailed=false'), { before: running('main') }),
    step('task-restart', 'POST /tasks/0/restart (204)', 'POST', c('main', '/tasks/0/restart'), { before: running('main') }),
    step('task-restart-unknown', 'POST /tasks/9/restart (unknown task)', 'POST', c('main', '/tasks/9/restart'), { before: running('main') }),
    step('stop', 'PUT /stop (204)', 'PUT', c('main', '/stop'), { before: running('main') }),
    step('status-stopped', 'GET the status once STOPPED (no tasks)', 'GET', c('main', '/status'), { before: (ctx) => waitForState(ctx, 'main', 'STOPPED', 0) }),
    step('stop-again', 'PUT /stop again (idempotent)', 'PUT', c('main', '/stop')),
    step('get-stopped', 'GET the connector while STOPPED (tasks [])', 'GET', c('main'), INFO),
    step('tasks-stopped', 'GET the tasks while STOPPED', 'GET', c('main', '/tasks')),
    step('offsets-stopped', 'GET offsets while STOPPED', 'GET', c('main', '/offsets'), { before: (ctx) => ctx.side.awaitGroupEmpty?.(ctx.names.main) ?? Promise.resolve() }),
    step('offsets-patch-empty', 'PATCH an empty offsets list (400)', 'PATCH', c('main', '/offsets'), { body: () => ({ offsets: [] }) }),
    step('offsets-patch-no-body', 'PATCH offsets without a body', 'PATCH', c('main', '/offsets')),
    step('offsets-patch-bad-partition', 'PATCH offsets with a partition that is not a number', 'PATCH', c('main', '/offsets'), {
      body: (ctx) => ({ offsets: [{ partition: { kafka_topic: ctx.topic, kafka_partition: 'zero' }, offset: { kafka_offset: 1 } }] }),
    }),
    step('offsets-patch', 'PATCH offsets while STOPPED to the committed offset (200)', 'PATCH', c('main', '/offsets'), { body: offsetsAt(RECORDS) }),
    step('offsets-patch-back', 'PATCH offsets while STOPPED back to offset 1 (re-delivers records the sink already wrote)', 'PATCH', c('main', '/offsets'), { body: offsetsAt(1) }),
    step('offsets-after-patch', 'GET offsets after the PATCH', 'GET', c('main', '/offsets')),
    step('offsets-patch-null', 'PATCH an offset to null (reset one partition)', 'PATCH', c('main', '/offsets'), {
      body: (ctx) => ({ offsets: [{ partition: { kafka_topic: ctx.topic, kafka_partition: 0 }, offset: null }] }),
    }),
    step('offsets-delete', 'DELETE offsets while STOPPED (200)', 'DELETE', c('main', '/offsets')),
    step('offsets-after-delete', 'GET offsets after the DELETE', 'GET', c('main', '/offsets')),
    step('offsets-patch-stopped-initial', 'PATCH offsets of the connector created STOPPED (it never consumed)', 'PATCH', c('stopped', '/offsets'), { body: offsetsPatch }),
    step('offsets-stopped-initial', 'GET offsets of the connector created STOPPED after the PATCH', 'GET', c('stopped', '/offsets')),
    step('offsets-patch-null-stopped-initial', 'PATCH an offset of the connector created STOPPED to null', 'PATCH', c('stopped', '/offsets'), {
      body: (ctx) => ({ offsets: [{ partition: { kafka_topic: ctx.topic, kafka_partition: 0 }, offset: null }] }),
    }),
    step('offsets-delete-stopped-initial', 'DELETE offsets of the connector created STOPPED', 'DELETE', c('stopped', '/offsets')),
    step('offsets-after-delete-stopped-initial', 'GET offsets of the connector created STOPPED after the DELETE', 'GET', c('stopped', '/offsets')),
    step('resume-stopped', 'PUT /resume from STOPPED (202)', 'PUT', c('main', '/resume')),
    step('status-resumed-from-stopped', 'GET the status once RUNNING after STOPPED', 'GET', c('main', '/status'), { before: running('main') }),
    step('topics-reset', 'PUT /topics/reset (202)', 'PUT', c('main', '/topics/reset')),
    step('topics-after-reset', 'GET /topics once the reset shows (the reset applies asynchronously)', 'GET', c('main', '/topics'), {
      connectorKeyed: [''],
      before: async (ctx) => {
        await poll(`${ctx.side.label}: active topics of ${ctx.names.main} empty after the reset`, async () => {
          const r = await ctx.get(`/connectors/${ctx.enc('main')}/topics`);
          return (r.json as Record<string, { topics?: unknown[] }> | undefined)?.[ctx.names.main]?.topics?.length === 0 ? true : undefined;
        }, 20_000);
      },
    }),
  ];
}

function routingAndLoggerSteps(): Step[] {
  const known = (ctx: RunContext): string => `/admin/loggers/${encodeURIComponent(ctx.side.logger)}`;
  const lg = (ctx: RunContext): string => `/admin/loggers/${encodeURIComponent(`${ctx.side.logger}.conformance.${ctx.prefix}`)}`;
  return [
    step('route-unknown', 'GET an unknown route (404)', 'GET', at('/no-such-route')),
    step('route-unknown-subresource', 'GET /connectors/{c}/nope (404)', 'GET', c('main', '/nope')),
    step('method-not-allowed-pause', 'POST /connectors/{c}/pause (405)', 'POST', c('main', '/pause')),
    step('method-not-allowed-list', 'DELETE /connectors (405)', 'DELETE', at('/connectors')),
    step('method-not-allowed-restart', 'GET /connectors/{c}/restart (405)', 'GET', c('main', '/restart')),
    step('loggers', 'GET /admin/loggers', 'GET', at('/admin/loggers'), { dicts: [''] }),
    step('loggers-trailing-slash', 'GET /admin/loggers/ (trailing slash)', 'GET', at('/admin/loggers/'), { dicts: [''] }),
    step('logger-root', 'GET /admin/loggers/root', 'GET', at('/admin/loggers/root')),
    step('logger', 'GET a logger that exists and was never set', 'GET', known),
    step('logger-unknown', 'GET a logger that does not exist (the one the next step sets)', 'GET', lg),
    step('logger-put', 'PUT a logger level (worker scope: 200 with the affected loggers)', 'PUT', lg, { body: () => ({ level: 'DEBUG' }) }),
    step('logger-after-put', 'GET the logger after the PUT (last_modified set)', 'GET', lg),
    step('logger-put-cluster', 'PUT a logger level with scope=cluster (204)', 'PUT', (ctx) => `${lg(ctx)}?scope=cluster`, { body: () => ({ level: 'WARN' }) }),
    step('logger-after-put-cluster', 'GET the logger once the cluster-scope level applies (asynchronously)', 'GET', lg, {
      before: async (ctx) => {
        await poll(`${ctx.side.label}: cluster-scope level WARN`, async () => ((await ctx.get(lg(ctx))).json as { level?: string } | undefined)?.level === 'WARN' || undefined);
      },
    }),
    step('logger-put-bad-level', 'PUT an invalid level', 'PUT', lg, { body: () => ({ level: 'LOUD' }) }),
    step('logger-put-no-level', 'PUT without level', 'PUT', lg, { body: () => ({}) }),
    step('logger-put-restore', 'PUT the level to INFO (200, the logger changed)', 'PUT', lg, { body: () => ({ level: 'INFO' }) }),
    step('logger-put-unchanged', 'PUT the same level again (200, nothing changed)', 'PUT', lg, { body: () => ({ level: 'INFO' }) }),
    step('loggers-after-put', 'GET /admin/loggers after the PUT', 'GET', at('/admin/loggers'), { dicts: [''] }),
  ];
}

function deleteSteps(): Step[] {
  const roles: Role[] = ['main', 'paused', 'stopped', 'odd'];
  return [
    ...roles.map((r) => step(`delete-${r}`, `DELETE the ${r} connector (204)`, 'DELETE', c(r))),
    step('get-after-delete', 'GET the deleted connector (404 once gone)', 'GET', c('main'), { before: (ctx) => waitForGone(ctx, 'main') }),
    step('delete-again', 'DELETE the deleted connector again', 'DELETE', c('main'), { before: async (ctx) => Promise.all(roles.map((r) => waitForGone(ctx, r))).then(() => undefined) }),
    step('list-after-delete', 'GET /connectors after deleting every connector of the run', 'GET', at('/connectors'), { connectorList: true }),
    step('delete-probe', 'DELETE the probe name (every create of it should have failed: 404)', 'DELETE', c('probe')),
    step('health-end', 'GET /health at the end', 'GET', at('/health')),
  ];
}

/** The whole sequence, in order. */
export function conformanceSequence(): Step[] {
  return [...serverAndPluginSteps(), ...createSteps(), ...readSteps(), ...configWriteSteps(), ...stateSteps(), ...unknownConnectorSteps(), ...routingAndLoggerSteps(), ...deleteSteps()];
}
