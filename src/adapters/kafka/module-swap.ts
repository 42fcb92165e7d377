/**
 * A kafkajs module whose export (a function) mufold replaces: kafkajs's
 * modules take their pieces once, when they are loaded, so the replacement
 * must be in place before the module that takes it (`takenBy`) is loaded. The
 * replacement carries the original under a registered symbol (`mark`): a
 * second copy of mufold's modules sees the swap was made.
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

export interface ModuleSwap<F> {
  /** kafkajs's own export, swapped or not. */
  original(): F;
  /** Swap it; whether `takenBy` will take the replacement (false when it was loaded before). */
  install(): boolean;
}

export function moduleSwap<F extends object>(options: { module: string; takenBy: string; mark: symbol; replace: (original: F) => F }): ModuleSwap<F> {
  const path = require.resolve(options.module);
  const takenBy = require.resolve(options.takenBy);
  type Swapped = F & { [mark: symbol]: F | undefined };
  const current = () => require(path) as Swapped;
  return {
    original: () => current()[options.mark] ?? current(),
    install: () => {
      const found = current();
      if (found[options.mark] !== undefined) return true;
      if (require.cache[takenBy] !== undefined) return false;
      require.cache[path]!.exports = Object.assign(options.replace(found), { [options.mark]: found });
      return true;
    },
  };
}
