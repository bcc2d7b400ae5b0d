/**
 * The typed test-side client of the fault-injection proxy's control API (test/fault-proxy/server.ts).
 *
 * Owns: arming and removing rules, releasing held requests, reading the request log. Must not hold
 * state of its own: the proxy is the one source of truth, so two clients see the same rules.
 */
import type { LogEntry, RuleSpec, RuleState } from './server.ts';

export type { Fault, LogEntry, RuleMatch, RuleSpec, RuleState, StatusPreset } from './server.ts';

export class FaultProxy {
  readonly #base: string;

  /** `controlUrl` is the proxy's control address, e.g. http://127.0.0.1:9199. */
  constructor(controlUrl: string) {
    this.#base = controlUrl.replace(/\/+$/, '');
  }

  /** Arms a rule; returns its id. */
  async arm(rule: RuleSpec): Promise<string> {
    const state = await this.#call<RuleState>('POST', '/rules', rule);
    return state.id;
  }

  /** The rule's counters: how often it applied, whether it is spent, how many requests it holds now. */
  async rule(id: string): Promise<RuleState> {
    return this.#call<RuleState>('GET', `/rules/${encodeURIComponent(id)}`);
  }

  async rules(): Promise<RuleState[]> {
    return (await this.#call<{ rules: RuleState[] }>('GET', '/rules')).rules;
  }

  /** Forwards every request the hold rule holds now; returns how many. */
  async release(id: string): Promise<number> {
    return (await this.#call<{ released: number }>('POST', `/rules/${encodeURIComponent(id)}/release`)).released;
  }

  /** Polls until the rule holds at least `n` requests; fails after `timeoutMs`. */
  async waitHeld(id: string, n = 1, timeoutMs = 10_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const state = await this.rule(id);
      if (state.held >= n) return;
      if (performance.now() > deadline) {
        throw new Error(`fault proxy: rule ${id} holds ${state.held} request(s), wanted ${n}, after ${timeoutMs} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** Removes one rule; requests it holds are forwarded. */
  async remove(id: string): Promise<void> {
    await this.#call('DELETE', `/rules/${encodeURIComponent(id)}`);
  }

  /** Removes every rule; held requests are forwarded, so the proxy is transparent again. */
  async clear(): Promise<void> {
    await this.#call('DELETE', '/rules');
  }

  /** The request log, oldest first; only `target`'s requests when given. */
  async log(target?: string): Promise<LogEntry[]> {
    const query = target === undefined ? '' : `?target=${encodeURIComponent(target)}`;
    return (await this.#call<{ entries: LogEntry[] }>('GET', `/log${query}`)).entries;
  }

  async clearLog(): Promise<void> {
    await this.#call('DELETE', '/log');
  }

  async #call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = `${this.#base}${path}`;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message;
      throw new Error(`fault proxy control at ${this.#base} is not reachable (${cause}): is the stack up? scripts/stack status`, { cause: e });
    }
    const text = await res.text();
    if (!res.ok) throw new Error(`fault proxy: ${method} ${path} -> ${res.status}: ${text}`);
    return JSON.parse(text) as T;
  }
}
