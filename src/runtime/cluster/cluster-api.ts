/**
 * The cluster as the herder sees it (distributed mode): placement, the other workers' status reports and
 * restart requests. Implemented in runtime/cluster/cluster.ts over Redis membership and the Kafka topics;
 * absent in standalone mode, where this worker runs every unit.
 */
import type { RestartOptions } from '../herder-api.ts';
import type { ConnectorShare } from '../worker.ts';

/** A unit's status as the worker running it last reported it (the status topic). */
export interface ReportedStatus {
  readonly state: string;
  readonly trace?: string;
  readonly worker_id: string;
}

/** A restart request, as every worker of a cluster receives it. */
export type RestartRequest = { readonly kind: 'connector'; readonly options: RestartOptions } | { readonly kind: 'task'; readonly task: number };

/**
 * The cluster around this worker (distributed mode; absent in standalone, where this worker runs
 * everything): placement, the other workers' reports, restart requests.
 */
export interface ClusterPort {
  /** The connectors placement spreads (called whenever the stored ones change). */
  setConnectors(connectors: readonly { readonly name: string; readonly tasks: number; readonly committer: boolean }[]): void;
  /** What of `name` this worker runs under the current placement. */
  share(name: string): ConnectorShare;
  /** The worker that runs task `n` (or the committer: the connector instance) of `name`; undefined when nobody does. */
  owner(name: string, unit: number | 'connector'): string | undefined;
  /** Called when the placement changed (workers came or went). */
  onPlacement(listener: () => void): void;
  /** What the worker running the unit last reported. */
  reported(name: string, unit: number | 'connector'): ReportedStatus | undefined;
  /** Stores a restart request for every worker (this one included: it arrives through onRestart). */
  requestRestart(name: string, request: RestartRequest): Promise<void>;
  onRestart(listener: (name: string, request: RestartRequest) => void): void;
  /**
   * Whether this worker cannot read or write the status topic now (Kafka unreachable): since when (wall
   * clock ms) and the last error; undefined while it can. Other workers' reports are then as old as that.
   */
  statusTopicTrouble(): { readonly sinceMs: number; readonly error: string } | undefined;
  /** The worker running the connector instance (its committer) reported it FAILED, or RUNNING again. */
  onConnectorState(listener: (name: string, state: 'FAILED' | 'RUNNING', trace: string | undefined) => void): void;
}
