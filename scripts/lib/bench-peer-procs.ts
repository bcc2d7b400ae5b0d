/**
 * CPU time and memory of whole process groups for `npm run bench:peer`: the stack's services (Kafka broker,
 * S3 server, REST catalog JVM, PostgreSQL, schema registry), each the leader of its own process group
 * (scripts/lib/common.sh `start_bg` runs them under setsid, their PIDs in $ICEFLOE_RUN/pids), and the
 * Java Connect worker the benchmark spawns detached. A group's CPU is every live member's utime + stime
 * plus their exited children's (cutime + cstime: PostgreSQL forks a backend per connection, and the
 * postmaster's cutime keeps their CPU once they exit), so the sum only grows while members come and go.
 * Memory: the peak over the samples of the members' summed RSS (for one process, its sampled peak;
 * PostgreSQL's shared buffers count once per backend that touched them).
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { procMemory, procStat } from './proc.ts';

export interface GroupReading {
  readonly cpuS: number;
  readonly rssBytes: number;
  /** Peak resident set (VmHWM) of the group's leader. */
  readonly leaderHwmBytes: number;
}

/** One pass over /proc: every process's group, CPU (own + reaped children) and RSS. */
function readGroups(pgids: ReadonlySet<number>): Map<number, GroupReading> {
  const out = new Map<number, { cpuS: number; rssBytes: number; leaderHwmBytes: number }>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const pid = Number(d);
    const st = procStat(pid);
    if (st === undefined || !pgids.has(st.pgrp)) continue;
    const g = out.get(st.pgrp) ?? { cpuS: 0, rssBytes: 0, leaderHwmBytes: 0 };
    g.cpuS += st.cpuS + st.childrenCpuS;
    const mem = procMemory(pid);
    if (mem !== undefined && Number.isFinite(mem.rssBytes)) g.rssBytes += mem.rssBytes;
    if (pid === st.pgrp && mem !== undefined && Number.isFinite(mem.hwmBytes)) g.leaderHwmBytes = mem.hwmBytes;
    out.set(st.pgrp, g);
  }
  return out;
}

export interface Tracked {
  readonly name: string;
  readonly pgid: number;
}

/** What a window of sampling saw of one group: CPU used within it, peak summed RSS, the leader's VmHWM. */
export interface GroupUsage {
  readonly name: string;
  readonly cpuS: number;
  readonly peakRssBytes: number;
  readonly leaderHwmBytes: number;
}

interface Window {
  readonly start: Map<number, number>;
  readonly peak: Map<number, number>;
  readonly last: Map<number, GroupReading>;
}

/**
 * Samples named process groups every `intervalMs`. `begin()` opens a window (a phase of the run); `end()`
 * closes it with each group's CPU used since `begin()` and its peak RSS within it. A group that is gone
 * keeps its last reading (a JVM that exited: its CPU up to its last sample).
 */
export class GroupsSampler {
  private readonly groups = new Map<number, string>();
  private timer: NodeJS.Timeout | undefined;
  private readonly windows = new Set<Window>();
  private readonly last = new Map<number, GroupReading>();

  track(t: Tracked): void {
    this.groups.set(t.pgid, t.name);
    this.sample();
  }

  untrack(pgid: number): void {
    this.sample();
    this.groups.delete(pgid);
  }

  start(intervalMs = 250): void {
    clearInterval(this.timer);
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  sample(): void {
    const now = readGroups(new Set(this.groups.keys()));
    for (const [pgid, r] of now) {
      this.last.set(pgid, r);
      for (const w of this.windows) {
        if (!w.start.has(pgid)) w.start.set(pgid, r.cpuS);
        w.peak.set(pgid, Math.max(w.peak.get(pgid) ?? 0, r.rssBytes));
        w.last.set(pgid, r);
      }
    }
  }

  /** The group's reading now (its CPU since it started), undefined once it is gone. */
  reading(pgid: number): GroupReading | undefined {
    this.sample();
    return this.groups.has(pgid) ? this.last.get(pgid) : undefined;
  }

  /** Opens a window; groups in `fromStart` count all their CPU (a process spawned for this window). */
  begin(fromStart: readonly number[] = []): Window {
    this.sample();
    const w: Window = { start: new Map(), peak: new Map(), last: new Map() };
    for (const [pgid, r] of this.last) {
      if (!this.groups.has(pgid)) continue;
      w.start.set(pgid, fromStart.includes(pgid) ? 0 : r.cpuS);
      w.peak.set(pgid, r.rssBytes);
      w.last.set(pgid, r);
    }
    this.windows.add(w);
    return w;
  }

  /** Closes the window: usage per tracked group (those tracked at any time during it), by name. */
  end(w: Window): Map<string, GroupUsage> {
    this.sample();
    this.windows.delete(w);
    const out = new Map<string, GroupUsage>();
    for (const [pgid, r] of w.last) {
      const name = this.groups.get(pgid) ?? `pgid ${pgid}`;
      out.set(name, { name, cpuS: r.cpuS - (w.start.get(pgid) ?? r.cpuS), peakRssBytes: w.peak.get(pgid) ?? 0, leaderHwmBytes: r.leaderHwmBytes });
    }
    return out;
  }
}

/** The stack services a run of bench:peer measures, by their name in scripts/stack, and how the report names them. */
export const SERVICES: readonly { readonly pidFile: RegExp; readonly name: string }[] = [
  { pidFile: /^kafka(-\d+)?\.pid$/, name: 'Kafka broker' },
  { pidFile: /^s3\.pid$/, name: 'S3 (moto)' },
  { pidFile: /^catalog\.pid$/, name: 'REST catalog' },
  { pidFile: /^postgres\.pid$/, name: 'PostgreSQL' },
  { pidFile: /^registry\.pid$/, name: 'registry' },
];

/** The live service groups of the stack run in `runDir` (several brokers are named broker 1, 2, ...). */
export function stackServices(runDir: string): Tracked[] {
  const dir = join(runDir, 'pids');
  if (!existsSync(dir)) return [];
  const out: Tracked[] = [];
  const files = readdirSync(dir).sort();
  for (const s of SERVICES) {
    const matching = files.filter((f) => s.pidFile.test(f));
    for (const f of matching) {
      const pid = Number(readFileSync(join(dir, f), 'utf8').trim());
      const st = Number.isSafeInteger(pid) && pid > 0 ? procStat(pid) : undefined;
      if (st === undefined) continue;
      const n = /-(\d+)\.pid$/.exec(f)?.[1];
      out.push({ name: matching.length > 1 && n !== undefined ? `${s.name} ${n}` : s.name, pgid: st.pgrp });
    }
  }
  return out;
}
