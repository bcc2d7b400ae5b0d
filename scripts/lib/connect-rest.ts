/**
 * The few calls of Kafka Connect's REST API that `npm run bench:peer` makes, the same against a Connect JVM
 * and against `icefloe standalone` (both serve it): create a connector with `PUT /connectors/<name>/config`,
 * delete it, read whether it or a task FAILED.
 */

/** Creates (or reconfigures) a connector; resolves, once answered, with when it was asked. */
export async function putConnectorConfig(url: string, name: string, config: Readonly<Record<string, string>>): Promise<number> {
  const at = Date.now(); // the worker may start the task (and log its assignment) before it answers
  const r = await fetch(`${url}/connectors/${encodeURIComponent(name)}/config`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(config) });
  if (!r.ok) throw new Error(`PUT connector ${name}: HTTP ${r.status} ${await r.text()}`);
  return at;
}

/** Deletes a connector (one already gone is fine). */
export async function deleteConnector(url: string, name: string): Promise<void> {
  const r = await fetch(`${url}/connectors/${encodeURIComponent(name)}`, { method: 'DELETE' });
  if (!r.ok && r.status !== 404) throw new Error(`DELETE connector ${name}: HTTP ${r.status} ${await r.text()}`);
}

/** The trace of a FAILED connector or task of `name`, if any (nothing while the REST server starts or the connector is unknown). */
export async function connectorFailure(url: string, name: string): Promise<string | undefined> {
  try {
    const r = await fetch(`${url}/connectors/${encodeURIComponent(name)}/status`);
    if (!r.ok) return undefined;
    const s = (await r.json()) as { connector?: { state: string; trace?: string }; tasks?: { state: string; trace?: string }[] };
    const failed = [s.connector, ...(s.tasks ?? [])].find((x) => x?.state === 'FAILED');
    return failed === undefined ? undefined : (failed.trace ?? 'FAILED (no trace)');
  } catch {
    return undefined;
  }
}
