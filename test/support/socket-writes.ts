/** Socket writes of a Redis client, counted: how the tests see that commands leave in groups. */
import type { Redis } from "ioredis";

/** Count the socket writes `client` makes while `f` runs (Node's Writable calls _write or, when corked, _writev). */
export async function socketWrites(client: Redis, f: () => Promise<unknown>): Promise<number> {
  const socket = client.stream as unknown as Record<"_write" | "_writev", (...args: unknown[]) => unknown>;
  let writes = 0;
  const originals = { _write: socket._write, _writev: socket._writev };
  for (const name of ["_write", "_writev"] as const) {
    const original = originals[name];
    socket[name] = (...args: unknown[]) => {
      writes++;
      return original.apply(socket, args);
    };
  }
  try {
    await f();
  } finally {
    Object.assign(socket, originals);
  }
  return writes;
}
