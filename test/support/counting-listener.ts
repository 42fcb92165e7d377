/**
 * A TCP listener that accepts and counts connections and says nothing: the
 * CLI tests point KAFKA_BROKERS and REDIS_URL at it to prove a command gave up
 * (usage errors, --help) before it connected anywhere.
 */
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";

export interface CountingListener {
  /** Connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

/** Start one on a free port, with KAFKA_BROKERS, REDIS_URL and a short connect timeout pointing at it. */
export async function pointEndpointsAtCountingListener(): Promise<CountingListener> {
  let connections = 0;
  const sockets: Socket[] = [];
  const listener: Server = createServer((socket) => {
    connections++;
    sockets.push(socket);
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const { port } = listener.address() as AddressInfo;
  process.env.KAFKA_BROKERS = `127.0.0.1:${port}`;
  process.env.REDIS_URL = `redis://127.0.0.1:${port}`;
  process.env.MUFOLD_CONNECT_TIMEOUT_MS = "500";
  return {
    get connections() {
      return connections;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => listener.close(resolve));
    },
  };
}
