/**
 * Linux /proc readers for the benchmarks: a process's CPU time (utime + stime, all its threads), its
 * peak and current resident set (VmHWM, VmRSS), the members of a process group, and a process found by
 * its command line (the Kafka broker). Everything returns undefined for a process that is gone.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times (100 on every Linux we run on; asked once). */
export const CLK_TCK: number = (() => {
  try {
    const v = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(v) && v > 0 ? v : 100;
  } catch {
    return 100;
  }
})();

export interface ProcStat {
  readonly pid: number;
  readonly ppid: number;
  readonly pgrp: number;
  /** utime + stime in seconds (the process's threads; children that exited are not included). */
  readonly cpuS: number;
  /** cutime + cstime in seconds: children that exited and were waited for (PostgreSQL's backends). */
  readonly childrenCpuS: number;
}

export function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may contain spaces: the fields after it are split.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state): ppid 4, pgrp 5, utime 14, stime 15, cutime 16, cstime 17.
  const f = (n: number): number => Number(rest[n - 3]);
  return { pid, ppid: f(4), pgrp: f(5), cpuS: (f(14) + f(15)) / CLK_TCK, childrenCpuS: (f(16) + f(17)) / CLK_TCK };
}

export interface ProcMemory {
  /** Peak resident set (VmHWM), bytes. */
  readonly hwmBytes: number;
  readonly rssBytes: number;
}

export function procMemory(pid: number): ProcMemory | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN) * 1024;
  return { hwmBytes: kb('VmHWM'), rssBytes: kb('VmRSS') };
}

export function procCmdline(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return undefined;
  }
}

function pids(): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
}

/** Live members of process group `pgid` (a process spawned `detached` leads its own group). */
export function processGroup(pgid: number): number[] {
  const out: number[] = [];
  for (const pid of pids()) if (procStat(pid)?.pgrp === pgid) out.push(pid);
  return out;
}

/** The first process whose command line matches (e.g. the Kafka broker: / kafka\.Kafka /). */
export function findProcess(pattern: RegExp): number | undefined {
  for (const pid of pids()) {
    if (pid === process.pid) continue;
    const cmd = procCmdline(pid);
    if (cmd !== undefined && pattern.test(cmd)) return pid;
  }
  return undefined;
}

/** The 1, 5 and 15 minute load averages. */
export function loadAverage(): [number, number, number] {
  const [a, b, c] = readFileSync('/proc/loadavg', 'utf8').split(' ').map(Number);
  return [a ?? Number.NaN, b ?? Number.NaN, c ?? Number.NaN];
}
