/**
 * The catalog check of connector validation (connector-validation.ts `CatalogProbe`): open the
 * connector's catalog, list its top-level namespaces (the cheapest call every catalog answers, and one
 * that needs the credentials), ask whether each table the validation names exists, close it. The
 * composition root supplies how a catalog is opened, so the probe uses exactly the adapters a task would.
 *
 * Must not: create or change tables or namespaces (a SQL catalog's client does create its two catalog
 * tables when they are missing, as Java's JdbcCatalog does when it starts and as the worker would), or
 * outlive the validation (it closes the catalog when the validation stops waiting).
 */
import { errorMessage } from '../core/errors.ts';
import type { CatalogConfig } from '../config/connector-config.ts';
import type { CatalogProbe } from './connector-validation.ts';
import { parseIdentifier } from '../commit/port.ts';
import type { TableIdentifier } from '../commit/port.ts';

function identifierOrNull(text: string): TableIdentifier | null {
  try {
    return parseIdentifier(text);
  } catch {
    return null;
  }
}

/** What the probe needs of a catalog (a `Catalog` of commit/port.ts has both). */
export interface ProbeTarget {
  listNamespaces(): Promise<unknown>;
  tableExists(id: TableIdentifier): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * A probe over `open`, which builds a catalog client for a connector's catalog settings (for a REST
 * catalog best without read retries and with a request time-out under the validation's, so a refused
 * connection is reported as such rather than as a time-out).
 */
export function catalogProbe(open: (catalog: CatalogConfig) => ProbeTarget): CatalogProbe {
  return async (config, signal, tables) => {
    let target: ProbeTarget;
    try {
      target = open(config);
    } catch (e) {
      return errorMessage(e);
    }
    const close = (): void => void target.close().catch(() => undefined);
    signal.addEventListener('abort', close, { once: true });
    try {
      await target.listNamespaces();
      // A name that is no identifier is the config's error (it refuses it), not the catalog's to answer.
      const ids = tables.flatMap((t) => {
        const id = identifierOrNull(t);
        return id === null ? [] : [{ t, id }];
      });
      const exists = await Promise.all(ids.map(({ id }) => target.tableExists(id)));
      const missingTables = ids.filter((_, i) => exists[i] === false).map(({ t }) => t);
      return missingTables.length === 0 ? undefined : { missingTables };
    } catch (e) {
      return errorMessage(e);
    } finally {
      signal.removeEventListener('abort', close);
      if (!signal.aborted) close();
    }
  };
}
