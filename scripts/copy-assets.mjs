// Copies non-TypeScript assets (the Redis Function library) next to the compiled code.
import { cpSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const from = join(root, "src/adapters/redis/functions");
const to = join(root, "dist/src/adapters/redis/functions");
mkdirSync(to, { recursive: true });
cpSync(from, to, { recursive: true });
