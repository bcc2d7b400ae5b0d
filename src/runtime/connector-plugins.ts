/**
 * What `GET /connector-plugins` and `GET /connector-plugins/{plugin}/config` answer: the plugins this
 * worker really has, under the class names users put in configs (reference/connect-rest.md §1.3, §2.1,
 * §2.3–2.4).
 *
 * Decisions:
 * - Two sink entries for the one connector: `org.apache.iceberg.connect.IcebergSinkConnector` (the name
 *   existing connector JSON and tools use) and `io.icefloe.connect.IcefloeSinkConnector` (ours). The
 *   Tabular class is accepted in configs and by `pluginConfig`, but not listed: listing it would suggest
 *   Tabular's key set, which Icefloe does not read.
 * - `version`: the Apache entry reports the Iceberg sink release whose keys and defaults Icefloe
 *   emulates (`ICEBERG_SINK_VERSION`), so tools gating on the Iceberg sink's version see the behaviour
 *   they get; every other entry (ours, the converters) reports Icefloe's own version, because it is
 *   Icefloe's implementation.
 * - With connectorsOnly=false: the converter classes Icefloe decodes (config/converters.ts). No header
 *   converters (Icefloe converts no header values), no transformations or predicates (none is
 *   implemented yet; `transforms` is refused as not supported yet). When an SMT lands it is listed here.
 * - Names resolve as Connect's plugin aliases do: the full class name, the simple name, and the simple
 *   name without its type suffix (`IcebergSinkConnector`, `IcebergSink`; `JsonConverter`, `Json`).
 *
 * Must not: list a plugin Icefloe does not implement.
 */
import { RequestRefused } from '../core/errors.ts';
import type { ConfigDef, ConfigKeyInfo } from '../config/config-def.ts';
import { APACHE_CONNECTOR_CLASS, CONNECTOR_CONFIG_DEF, ICEFLOE_CONNECTOR_CLASS, TABULAR_CONNECTOR_CLASS } from '../config/connector-config.ts';
import { KNOWN_CONVERTERS } from '../config/converters.ts';
import { CONVERTER_CONFIG_DEFS } from '../config/converter-defs.ts';
import type { PluginInfo } from './herder-api.ts';

/** The Apache Iceberg Kafka Connect sink release whose keys and defaults Icefloe emulates (connect-rest.md §2.9). */
export const ICEBERG_SINK_VERSION = '1.11.0';

export interface PluginEntry {
  readonly className: string;
  readonly type: PluginInfo['type'];
  readonly version: string;
  readonly def: ConfigDef;
  /** Listed by `plugins()`; an unlisted entry is only a name configs may use. */
  readonly listed: boolean;
}

function simpleName(className: string): string {
  return className.slice(className.lastIndexOf('.') + 1);
}

const SUFFIX: Partial<Record<PluginInfo['type'], string>> = { sink: 'Connector', source: 'Connector', converter: 'Converter', header_converter: 'Converter' };

/** A class's aliases, as Connect's plugin scanner derives them. */
function aliases(entry: PluginEntry): string[] {
  const simple = simpleName(entry.className);
  const suffix = SUFFIX[entry.type];
  const pruned = suffix !== undefined && simple.endsWith(suffix) && simple !== suffix ? simple.slice(0, -suffix.length) : undefined;
  return [entry.className, simple, ...(pruned === undefined ? [] : [pruned])];
}

function keyInfos(def: ConfigDef): ConfigKeyInfo[] {
  // The definitions exactly as the validate answer carries them (one renderer: ParsedConfig.toConfigInfos).
  return def
    .parse({})
    .toConfigInfos('')
    .configs.flatMap((c) => (c.definition === null ? [] : [c.definition]));
}

export class ConnectorPlugins {
  readonly #entries: readonly PluginEntry[];
  readonly #byName = new Map<string, PluginEntry>();

  constructor(options: { readonly icefloeVersion: string }) {
    const connector = (className: string, version: string, listed: boolean): PluginEntry => ({ className, type: 'sink', version, def: CONNECTOR_CONFIG_DEF, listed });
    this.#entries = Object.freeze([
      connector(APACHE_CONNECTOR_CLASS, ICEBERG_SINK_VERSION, true),
      connector(ICEFLOE_CONNECTOR_CLASS, options.icefloeVersion, true),
      connector(TABULAR_CONNECTOR_CLASS, ICEBERG_SINK_VERSION, false),
      ...Object.entries(KNOWN_CONVERTERS).map(([className, kind]): PluginEntry => ({ className, type: 'converter', version: options.icefloeVersion, def: CONVERTER_CONFIG_DEFS[kind], listed: true })),
    ]);
    // First entry wins an alias: `IcebergSinkConnector` is the Apache class, not Tabular's.
    for (const entry of this.#entries) for (const alias of aliases(entry)) if (!this.#byName.has(alias)) this.#byName.set(alias, entry);
  }

  /** `GET /connector-plugins?connectorsOnly=`: connectors only, or every plugin type Icefloe implements. */
  plugins(connectorsOnly: boolean): readonly PluginInfo[] {
    return this.#entries
      .filter((e) => e.listed && (!connectorsOnly || e.type === 'sink' || e.type === 'source'))
      .map((e) => ({ class: e.className, type: e.type, version: e.version }));
  }

  /** The entry a class name or alias names, or undefined. */
  resolve(name: string): PluginEntry | undefined {
    return this.#byName.get(name);
  }

  /** The connector entry a `connector.class` value names, or undefined (unknown, or not a connector). */
  connector(className: string): PluginEntry | undefined {
    const entry = this.resolve(className);
    return entry?.type === 'sink' ? entry : undefined;
  }

  /** `GET /connector-plugins/{plugin}/config`; 404 `Unknown plugin <name>.` as Connect. */
  pluginConfig(plugin: string): readonly ConfigKeyInfo[] {
    const entry = this.resolve(plugin);
    if (entry === undefined) throw new RequestRefused('not-found', `Unknown plugin ${plugin}.`);
    return keyInfos(entry.def);
  }

  /**
   * Connect's text listing the connectors when a class is unknown (`available connectors are: ...`),
   * in the shape of Java's `PluginDesc.toString()`.
   */
  availableConnectors(): string {
    return this.#entries
      .filter((e) => e.listed && e.type === 'sink')
      .map((e) => `PluginDesc{klass=class ${e.className}, name='${e.className}', version='${e.version}', encodedVersion=${e.version}, type=${e.type}, typeName='${e.type}', location='classpath'}`)
      .join(', ');
  }
}
