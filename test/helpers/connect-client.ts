/**
 * Real Kafka Connect REST clients from package registries, driven from Node tests, one process per client,
 * one JSON command and one JSON answer a line (test/clients/*):
 * - `sourcelab`: the Java library org.sourcelab:kafka-connect-client (Maven Central; AKHQ's Connect
 *   client) through test/clients/sourcelab/Driver.java;
 * - `kafka-connect-py`: the PyPI client through test/clients/kafka-connect-py/driver.py.
 * Every call goes through the library's own API, so an answer is what that library made of the server's
 * response: `ok: false` carries what it threw (a status it rejected, a body it could not parse).
 *
 * The clients are installed by scripts/stack.d/clients.sh (`scripts/stack up`); test/clients/install
 * installs them here too when the stack was brought up before that entry existed.
 */
import { execFile, spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stackEndpoints } from './stack.ts';

const INSTALL = fileURLToPath(new URL('../clients/install', import.meta.url));
const JAVA_DRIVER = fileURLToPath(new URL('../clients/sourcelab/Driver.java', import.meta.url));
const PY_DRIVER = fileURLToPath(new URL('../clients/kafka-connect-py/driver.py', import.meta.url));

export type ClientKind = 'sourcelab' | 'kafka-connect-py';

export type ClientOp =
  | 'version' | 'list' | 'expanded' | 'plugins'
  | 'create' | 'get' | 'config' | 'update' | 'status' | 'tasks' | 'topics'
  | 'pause' | 'resume' | 'stop' | 'restart' | 'delete';

export interface ClientCommand {
  readonly op: ClientOp;
  readonly name?: string;
  readonly config?: Readonly<Record<string, string>>;
}

export interface ClientAnswer {
  readonly op: string;
  readonly ok: boolean;
  readonly result?: unknown;
  /** The library's exception: its class, message and (for an error response it parsed) the HTTP status. */
  readonly error?: { readonly type: string; readonly message: string; readonly errorCode?: number };
}

/** A connector status as the clients return it (Connect's snake_case JSON; sourcelab: its ConnectorStatus DTO). */
export interface ClientStatus {
  readonly name: string;
  readonly type: string;
  readonly connector: { readonly state: string; readonly worker_id?: string; readonly trace?: string };
  readonly tasks: readonly { readonly id: number; readonly state: string; readonly worker_id?: string | null; readonly trace?: string | null }[];
}

interface Installed {
  /** The sourcelab library's jars. */
  readonly sourcelabLib: string;
  /** The venv python with kafka-connect-py. */
  readonly python: string;
}

let installed: Promise<Installed> | undefined;

/** Where the clients are: installs them first if needed (idempotent; ~15 s from an empty cache). */
export function installedClients(): Promise<Installed> {
  installed ??= new Promise((resolve, reject) => {
    execFile('bash', [INSTALL], { timeout: 300_000, env: { ...process.env, ICEFLOE_RUN: stackEndpoints().run } }, (err, stdout, stderr) => {
      if (err !== null) return reject(new Error(`test/clients/install failed: ${stderr || err.message}`, { cause: err }));
      const value = (key: string): string => {
        const m = new RegExp(`^${key}=(.+)$`, 'm').exec(stdout);
        if (m?.[1] === undefined) throw new Error(`test/clients/install printed no ${key}: ${stdout}`);
        return m[1];
      };
      try {
        resolve({ sourcelabLib: value('ICEFLOE_CONNECT_CLIENT_SOURCELAB_LIB'), python: value('ICEFLOE_CONNECT_CLIENT_PYTHON') });
      } catch (e) {
        reject(e as Error);
      }
    });
  });
  return installed;
}

export class ConnectClient {
  /** Every command sent and the answer it got, in order: the test's record of what the client saw. */
  readonly transcript: { command: ClientCommand; answer: ClientAnswer }[] = [];
  private readonly pending: ((line: string) => void)[] = [];
  private stderr = '';
  private readonly exited: Promise<string>;
  private readonly child: ChildProcessWithoutNullStreams;

  private constructor(child: ChildProcessWithoutNullStreams) {
    this.child = child;
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        this.pending.shift()?.(line);
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-8000);
    });
    this.exited = new Promise((res) => child.on('exit', (code, signal) => res(signal ?? String(code))));
  }

  /** Starts a client's driver against `url` (e.g. http://127.0.0.1:8083). */
  static async start(kind: ClientKind, url: string): Promise<ConnectClient> {
    const where = await installedClients();
    const child =
      kind === 'sourcelab'
        ? // The JDK's single-file source launcher compiles the driver in memory (~1 s): nothing compiled is kept.
          spawn(stackEndpoints().java17, ['-Xmx128m', '-XX:TieredStopAtLevel=1', '-cp', `${where.sourcelabLib}/*`, JAVA_DRIVER, url], { stdio: ['pipe', 'pipe', 'pipe'] })
        : spawn(where.python, [PY_DRIVER, url], { stdio: ['pipe', 'pipe', 'pipe'] });
    return new ConnectClient(child);
  }

  /** Sends one command and waits for its answer (calls are sequential: one at a time). */
  async call(command: ClientCommand, timeoutMs = 60_000): Promise<ClientAnswer> {
    const line = new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`client: no answer to ${JSON.stringify(command)} within ${timeoutMs} ms; stderr:\n${this.stderr}`)), timeoutMs);
      this.pending.push((l) => (clearTimeout(timer), resolve(l)));
      void this.exited.then((how) => (clearTimeout(timer), reject(new Error(`client exited (${how}) before answering ${JSON.stringify(command)}; stderr:\n${this.stderr}`))));
    });
    this.child.stdin.write(JSON.stringify(command) + '\n');
    const answer = JSON.parse(await line) as ClientAnswer;
    this.transcript.push({ command, answer });
    return answer;
  }

  /** Like `call`, but fails (with the library's exception) unless the library accepted the response. */
  async ok(command: ClientCommand, timeoutMs?: number): Promise<unknown> {
    const a = await this.call(command, timeoutMs);
    if (!a.ok) throw new Error(`client ${command.op}${command.name === undefined ? '' : ` ${command.name}`}: ${a.error?.type ?? '?'} ${a.error?.errorCode ?? ''} ${a.error?.message ?? ''}`);
    return a.result;
  }

  async close(): Promise<void> {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}
