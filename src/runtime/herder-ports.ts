/**
 * The standalone herder's configuration ports that need no adapter: how a stored config is parsed for
 * running (Connect's 400 message when it cannot run), the plugin Icefloe is with its definitions and
 * validation, and the logger levels.
 */
import { RequestRefused } from '../core/errors.ts';
import { parseConnectorConfig, validateConnectorConfig } from '../config/connector-config.ts';
import type { ConnectorConfig } from '../config/connector-config.ts';
import { APACHE_CONNECTOR_CLASS } from '../config/connector-def.ts';
import type { WorkerConfig } from '../config/worker-config.ts';
import type { LoggersPort, PluginsPort } from './herder.ts';

/**
 * A stored config as the herder runs it; a config that cannot run is refused with Connect's 400 message
 * (each problem on its own line), the ConfigError with our own wording kept as its cause.
 */
export function parseForHerder(raw: Readonly<Record<string, string>>, worker: WorkerConfig): ConnectorConfig {
  if (raw['connector.class'] === undefined) {
    throw new RequestRefused('bad-request', `Connector config {${Object.entries(raw).map(([k, v]) => `${k}=${v}`).join(', ')}} contains no connector type`);
  }
  const options = worker.defaultCatalogProps === undefined ? {} : { defaultCatalog: worker.defaultCatalogProps };
  const v = validateConnectorConfig(raw, options);
  if (v.config !== null) return v.config;
  const lines = [...v.errors].flatMap(([, errors]) => errors);
  let cause: unknown;
  try {
    parseConnectorConfig(raw, options);
  } catch (e) {
    cause = e;
  }
  throw new RequestRefused(
    'bad-request',
    `Connector configuration is invalid and contains the following ${lines.length} error(s):\n${lines.join('\n')}\nYou can also find the above list of errors at the endpoint \`/connector-plugins/{connectorType}/config/validate\``,
    { cause },
  );
}

/** The connector plugin Icefloe is, its config definitions and validation. */
export function herderPlugins(worker: WorkerConfig): PluginsPort {
  const options = worker.defaultCatalogProps === undefined ? {} : { defaultCatalog: worker.defaultCatalogProps };
  return {
    plugins: () => [{ class: APACHE_CONNECTOR_CLASS, type: 'sink' }],
    pluginConfig: () => validateConnectorConfig({}, options).configInfos().configs.flatMap((c) => (c.definition === null ? [] : [c.definition])),
    validate: (_plugin, config) => Promise.resolve(validateConnectorConfig(config, options).configInfos()),
  };
}

/** Logger levels (GET/PUT /admin/loggers). */
export function herderLoggers(level: string): LoggersPort {
  return {
    loggers: () => ({ root: { level: level.toUpperCase(), last_modified: null } }),
    logger: () => ({ level: level.toUpperCase(), last_modified: null }),
    setLevel: () => {
      throw new RequestRefused('failed', 'changing log levels is not supported yet');
    },
  };
}

