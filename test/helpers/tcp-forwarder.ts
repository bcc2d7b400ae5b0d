/**
 * A plain TCP forwarder for the network-namespace tests (test/helpers/netns.ts): for each port, listens on
 * `<listenHost>:<listenPort>` and pipes every connection to `<targetHost>:<targetPort>`. Run as a process of
 * its own (inside a namespace through `ip netns exec`), it prints one JSON line once every port listens: the
 * port each target port is served on (listen port 0: any free port; a service bound to every interface,
 * such as the catalog, holds its own port on the veth's address too).
 *
 * Usage: node test/helpers/tcp-forwarder.ts <listenHost> <targetHost> <listenPort>:<targetPort>...
 *
 * A dropped link leaves both halves of a connection hanging (nothing is refused or reset here), as a real
 * partition does; an upstream that cannot be reached ends the client's side.
 */
import { connect, createServer } from 'node:net';
import type { Server } from 'node:net';

const [listenHost, targetHost, ...pairs] = process.argv.slice(2);
if (listenHost === undefined || targetHost === undefined || pairs.length === 0) {
  process.stderr.write('usage: tcp-forwarder.ts <listenHost> <targetHost> <listenPort>:<targetPort>...\n');
  process.exit(2);
}

function forward(listenPort: number, port: number): Promise<Server> {
  const server = createServer((client) => {
    const upstream = connect({ host: targetHost, port });
    client.pipe(upstream);
    upstream.pipe(client);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, listenHost, () => resolve(server));
  });
}

const served: Record<string, number> = {};
await Promise.all(
  pairs.map(async (pair) => {
    const [listenPort, targetPort] = pair.split(':').map(Number) as [number, number];
    const address = (await forward(listenPort, targetPort)).address();
    served[targetPort] = typeof address === 'object' && address !== null ? address.port : listenPort;
  }),
);
process.stdout.write(`${JSON.stringify(served)}\n`);
