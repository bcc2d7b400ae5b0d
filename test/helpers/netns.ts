/**
 * A network namespace of the test's own, joined to the host by a veth pair, for partition tests: a process
 * run in it (`wrap`) reaches the stack's services at the same 127.0.0.1 addresses as everyone (a forwarder
 * in the namespace → the host end of the veth → a forwarder on the host → 127.0.0.1), so Kafka's advertised
 * 127.0.0.1:9092 works unchanged. `cut()` takes the host end of the veth down: packets are dropped, open
 * connections hang rather than being refused, as in a real partition; `heal()` brings it back up.
 *
 * Needs root and iproute2 (`ip netns`, `ip link`); no iptables. Names carry the test process's pid, so a
 * crashed run's leftovers never collide with the next run; leftovers of dead pids are removed on setup.
 * Traffic stays between the host and the test's own namespace.
 */
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import type { TestContext } from 'node:test';

const FORWARDER = resolve(import.meta.dirname, 'tcp-forwarder.ts');
const PREFIX = 'icefloe-cut-';

export interface Netns {
  readonly name: string;
  /** The host end's address (the host forwarders listen there). */
  readonly hostAddress: string;
  /** The namespace end's address: a worker's REST listener bound there is reachable from the host while linked. */
  readonly nsAddress: string;
  /** The command prefix that runs a program inside the namespace. */
  readonly wrap: readonly string[];
  /** Drops every packet between the namespace and the host (the host end of the veth goes down). */
  cut(): void;
  heal(): void;
}

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Removes the namespaces and veths of earlier runs whose test process is gone. */
function removeLeftovers(): void {
  for (const line of ip('netns', 'list').split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const m = new RegExp(`^${PREFIX}(\\d+)$`).exec(name);
    if (m !== null && !alive(Number(m[1]))) {
      try {
        ip('netns', 'del', name);
      } catch {
        // already gone
      }
    }
  }
  for (const line of ip('-o', 'link', 'show').split('\n')) {
    const m = /^\d+: (icf(\d+)h)[@:]/.exec(line);
    if (m !== null && !alive(Number(m[2]))) {
      try {
        ip('link', 'del', m[1] as string);
      } catch {
        // already gone
      }
    }
  }
}

/** Starts a forwarder of `pairs` (listen port → target port); resolves with it and the port each target port is served on. */
function startForwarder(wrap: readonly string[], listenHost: string, targetHost: string, pairs: readonly (readonly [number, number])[]): Promise<{ child: ChildProcess; served: Record<string, number> }> {
  const argv = [...wrap, process.execPath, FORWARDER, listenHost, targetHost, ...pairs.map(([l, p]) => `${l}:${p}`)];
  const child = spawn(argv[0] as string, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((res, rej) => {
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    child.stdout.once('data', (c: Buffer) => res({ child, served: JSON.parse(c.toString('utf8')) as Record<string, number> }));
    child.once('exit', (code) => rej(new Error(`forwarder ${listenHost} -> ${targetHost} exited ${code}: ${err}`)));
  });
}

/**
 * Makes the namespace and its forwarders for `ports` (Kafka, Redis, catalog, S3, ...); everything is removed
 * in an `after` hook of `t`, whatever the test's outcome.
 */
export async function partitionableNamespace(t: TestContext, ports: readonly number[]): Promise<Netns> {
  removeLeftovers();
  const pid = process.pid;
  const name = `${PREFIX}${pid}`;
  // Interface names are at most 15 characters; the /30 is chosen by pid so that a leftover cannot shadow it.
  const hostIf = `icf${pid}h`;
  const nsIf = `icf${pid}n`;
  const block = pid % 16384;
  const net = `10.213.${block >> 6}.${(block & 63) * 4}`;
  const base = net.split('.').map(Number);
  const addr = (i: number): string => `${base[0]}.${base[1]}.${base[2]}.${(base[3] as number) + i}`;
  const hostAddress = addr(1);
  const nsAddress = addr(2);
  const wrap = ['ip', 'netns', 'exec', name];
  const forwarders: ChildProcess[] = [];
  t.after(() => {
    for (const f of forwarders) f.kill('SIGKILL');
    try {
      ip('netns', 'del', name); // takes the namespace end of the veth, and with it the pair
    } catch {
      // never made
    }
    try {
      ip('link', 'del', hostIf);
    } catch {
      // gone with the namespace
    }
  });
  ip('netns', 'add', name);
  ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf);
  ip('link', 'set', nsIf, 'netns', name);
  ip('addr', 'add', `${hostAddress}/30`, 'dev', hostIf);
  ip('link', 'set', hostIf, 'up');
  ip('netns', 'exec', name, 'ip', 'addr', 'add', `${nsAddress}/30`, 'dev', nsIf);
  ip('netns', 'exec', name, 'ip', 'link', 'set', nsIf, 'up');
  ip('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up');
  // On the host any free port (the catalog binds every interface: its own port is taken on the veth too);
  // in the namespace the services' own ports, so the worker uses the same addresses as everyone.
  const host = await startForwarder([], hostAddress, '127.0.0.1', ports.map((p) => [0, p] as const));
  forwarders.push(host.child);
  const inside = await startForwarder(wrap, '127.0.0.1', hostAddress, ports.map((p) => [p, host.served[p] as number] as const));
  forwarders.push(inside.child);
  return {
    name,
    hostAddress,
    nsAddress,
    wrap,
    cut: () => void ip('link', 'set', hostIf, 'down'),
    heal: () => void ip('link', 'set', hostIf, 'up'),
  };
}
