/** `mufold fold`: join the group and fold until a signal, optionally serving HTTP from the same process. */
import { resolveSettings } from "../config/settings.js";
import { createLogger } from "../observability/log.js";
import { connectRedis, redisClientSettings } from "../adapters/redis/connect.js";
import { ProjectionReader } from "../client/readback.js";
import { createFoldMetrics } from "../observability/metrics.js";
import { Readiness } from "../http/readiness.js";
import { startHttpServer } from "../http/server.js";
import { FoldWorker } from "../../consumers/fold/fold-worker.js";
import { commandFlags } from "./command.js";
import { preflight } from "./preflight.js";
import { fatalMessage } from "./fatal.js";
import { fatalLine } from "../observability/log.js";
import { redisReadiness } from "./serve.js";
import { FOLD } from "./specs.js";
import { listenAddress } from "./values.js";
import { packageVersion } from "./version.js";

export async function foldCommand(args: string[]): Promise<number> {
  const values = await commandFlags(FOLD, args);
  if (values === undefined) return 0;
  const settings = resolveSettings(values);
  // Optional HTTP side: /metrics, /healthz, /readyz and the readback API, in the fold process (only with a port).
  const listen = listenAddress(settings, undefined);
  const log = createLogger({ service: "mufold" }, settings.logLevel);
  await preflight(settings, { kafka: true, redis: true });
  const metrics = createFoldMetrics({ build: { version: packageVersion(), reducerVersion: settings.reducerVersion } });
  const worker = await FoldWorker.start(settings, log, metrics);
  let http: { close(): Promise<void> } | undefined;
  let httpRedis: ReturnType<typeof connectRedis> | undefined;
  if (listen !== undefined) {
    httpRedis = connectRedis(redisClientSettings(settings));
    http = await startHttpServer({
      reader: new ProjectionReader(httpRedis, settings.prefix, settings.reducerVersion, settings.topic),
      registry: metrics.registry,
      readiness: Object.entries(worker.readinessChecks()).reduce(
        (r, [name, check]) => r.register(name, check),
        new Readiness().register("redis", redisReadiness(httpRedis)),
      ),
      port: listen.port,
      host: listen.host,
      log: log.child({ component: "http" }),
      reducerVersion: settings.reducerVersion,
    });
  }
  return new Promise<number>((resolve) => {
    const stop = (code: number) => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      const done = () => resolve(code);
      void Promise.allSettled([worker.stop(), http?.close(), httpRedis?.quit()]).then(done, done);
    };
    const onSignal = () => {
      log.info("stopping: finishing the current batch and leaving the group");
      stop(0);
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
    // A consumer that stopped on a non-retriable error ends the process, so a supervisor restarts it; one fatal
    // line says why (a recreated topic, another reducer version, an outage past the tolerance, ...).
    void worker.crashed.then((error) => {
      process.stderr.write(fatalLine(`the fold stops: ${fatalMessage(error)}`, { service: "mufold", command: "fold", exitCode: 1 }));
      stop(1);
    });
  });
}
