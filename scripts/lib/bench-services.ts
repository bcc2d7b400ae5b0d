/**
 * CPU-seconds of the stack's services over a load run of `npm run bench`: the Kafka broker, the S3 server
 * (moto), the REST catalog JVM, PostgreSQL and the schema registry, read from /proc before and after the
 * run. Each service is found by the stack's pid file ($ICEFLOE_RUN/pids/<name>.pid, written by
 * scripts/lib/common.sh `start_bg` and scripts/stack.d/postgres.sh) when that pid is alive and its command
 * line is the service's; otherwise by its command line alone (a stack started some other way). A service
 * is the process and its descendants, each counted with utime + stime plus cutime + cstime (the CPU of
 * children it has reaped): PostgreSQL forks a backend per connection, and a backend that exits during the
 * run keeps its CPU in the postmaster's cutime, so the sum only grows. A service that is not running reads
 * NaN (shown as "–"), never an error: the embedded storage path does not need S3, the catalog or PostgreSQL.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { childrenOf, findProcesses, procCmdline, procStat } from './proc.ts';

export const SERVICES = ['broker', 's3', 'catalog', 'postgres', 'registry'] as const;
export type Service = (typeof SERVICES)[number];

/** Column headings of the report. */
export const SERVICE_LABELS: Readonly<Record<Service, string>> = {
  broker: 'Kafka broker',
  s3: 'S3 (moto)',
  catalog: 'REST catalog JVM',
  postgres: 'PostgreSQL',
  registry: 'schema registry',
};

interface ServiceSpec {
  /** Pid file names under $ICEFLOE_RUN/pids (the broker: kafka-1.pid, kafka-2.pid, ...). */
  readonly pidFile: RegExp;
  /** The service's command line: checks a pid file's process, and finds the service without one. */
  readonly cmdline: RegExp;
}

// The stack's launchers: scripts/stack.d/{kafka,s3,catalog,postgres,registry}.sh.
const SPECS: Readonly<Record<Service, ServiceSpec>> = {
  broker: { pidFile: /^kafka(-\d+)?\.pid$/, cmdline: / kafka\.Kafka / },
  s3: { pidFile: /^s3\.pid$/, cmdline: /moto/ },
  catalog: { pidFile: /^catalog\.pid$/, cmdline: /org\.apache\.iceberg\.rest\.RESTCatalogServer/ },
  // The postmaster (its backends' command lines are "postgres: user db ...", without -D).
  postgres: { pidFile: /^postgres\.pid$/, cmdline: /(^|\/)postgres .*-D / },
  registry: { pidFile: /^registry\.pid$/, cmdline: /quarkus-run\.jar|apicurio/i },
};

/** The stack's run directory (older trees' stack helpers lack its key: the same default as theirs). */
export function stackRunDir(run: string | undefined): string {
  return run ?? process.env['ICEFLOE_RUN'] ?? '/tmp/icefloe-stack';
}

function pidsFromFiles(runDir: string, spec: ServiceSpec): number[] {
  const dir = join(runDir, 'pids');
  if (!existsSync(dir)) return [];
  const out: number[] = [];
  for (const f of readdirSync(dir).filter((n) => spec.pidFile.test(n)).sort()) {
    let pid: number;
    try {
      pid = Number(readFileSync(join(dir, f), 'utf8').trim());
    } catch {
      continue;
    }
    // A stale file's pid may have been reused by something else: only the service's own command line counts.
    if (Number.isSafeInteger(pid) && pid > 0 && spec.cmdline.test(procCmdline(pid) ?? '')) out.push(pid);
  }
  return out;
}

/** The root processes of each service now (empty: not running). */
export function findServices(runDir: string): Record<Service, number[]> {
  const out = {} as Record<Service, number[]>;
  for (const s of SERVICES) {
    const spec = SPECS[s];
    const fromFiles = pidsFromFiles(runDir, spec);
    out[s] = fromFiles.length > 0 ? fromFiles : findProcesses(spec.cmdline).filter((pid) => !spec.cmdline.test(procCmdline(procStat(pid)?.ppid ?? 0) ?? ''));
  }
  return out;
}

/** CPU-seconds of a process and its descendants, reaped children included; NaN when the process is gone. */
function treeCpuS(pid: number): number {
  const st = procStat(pid);
  if (st === undefined) return Number.NaN;
  let cpu = st.cpuS + st.childrenCpuS;
  for (const c of childrenOf(pid)) {
    const x = treeCpuS(c);
    if (Number.isFinite(x)) cpu += x;
  }
  return cpu;
}

/** Per service, the summed CPU-seconds of its roots now (NaN: not running, or a root is gone). */
export function servicesCpu(roots: Readonly<Record<Service, readonly number[]>>): Record<Service, number> {
  const out = {} as Record<Service, number>;
  for (const s of SERVICES) out[s] = roots[s].length === 0 ? Number.NaN : roots[s].reduce((n, pid) => n + treeCpuS(pid), 0);
  return out;
}

/** CPU-seconds each service used between two readings (NaN where either is). */
export function servicesDelta(before: Readonly<Record<Service, number>>, after: Readonly<Record<Service, number>>): Record<Service, number> {
  const out = {} as Record<Service, number>;
  for (const s of SERVICES) out[s] = after[s] - before[s];
  return out;
}

/** Starts measuring the services: call the returned function at the end of the run for each one's CPU-seconds. */
export function measureServices(run: string | undefined): () => Record<Service, number> {
  const roots = findServices(stackRunDir(run));
  const before = servicesCpu(roots);
  return () => servicesDelta(before, servicesCpu(roots));
}
