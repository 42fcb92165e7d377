/**
 * deploy/k8s/*.yaml, read as data: every workload takes only settings the
 * registry knows, its probes name endpoints the HTTP server answers on the
 * port it listens on, its secrets exist in the Secret template, and the fold's
 * memory (--max-old-space-size, request = limit) is what the capacity formula
 * (test/support/capacity.ts, docs/deployment.md "Resources") gives for the
 * settings the ConfigMap sets.
 */
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SETTINGS, type SettingName } from "../../src/config/settings.js";
import { WORKER_NODE_FLAGS } from "../../consumers/fold/fold-process.js";
import { workerMemory } from "../support/capacity.js";
import { flagValue, registryEnvNames, statusOf, yamlDocuments } from "../support/deploy.js";
import { last, parseDockerfile } from "../support/dockerfile.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DIR = `${ROOT}/deploy/k8s`;

interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  containers: Container[];
  volumes?: { name: string; secret?: { secretName: string; items?: { key: string; path: string }[] } }[];
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  terminationGracePeriodSeconds?: number;
  restartPolicy?: string;
}
interface Resource {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec: {
    replicas?: number;
    template?: { spec: PodSpec };
    selector?: Record<string, string> | { matchLabels: Record<string, string> };
    ports?: { port: number; targetPort: string | number }[];
  };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

const resources = readdirSync(DIR)
  .filter((f) => f.endsWith(".yaml"))
  .flatMap((f) => yamlDocuments(`${DIR}/${f}`) as Resource[]);
const find = (kind: string, name: string): Resource => {
  const r = resources.find((x) => x.kind === kind && x.metadata.name === name);
  if (r === undefined) throw new Error(`deploy/k8s has no ${kind} ${name}`);
  return r;
};
const configMap = find("ConfigMap", "mufold");
const secret = find("Secret", "mufold-credentials");
const workloads = resources.filter((r) => r.kind === "Deployment" || r.kind === "Job");
const fold = find("Deployment", "mufold-fold");
const serve = find("Deployment", "mufold-serve");
const setup = find("Job", "mufold-setup");
const pod = (r: Resource): PodSpec => r.spec.template!.spec;
const only = (r: Resource): Container => {
  expect(pod(r).containers).toHaveLength(1);
  return pod(r).containers[0]!;
};

/** A setting's value for these workloads: the ConfigMap's, else the registry's default (what the process would use). */
function setting(name: SettingName): string {
  return configMap.data![SETTINGS[name].env] ?? SETTINGS[name].default;
}

describe("deploy/k8s", () => {
  it("has the ConfigMap, the Secret template, the setup Job, the fold and serve Deployments and serve's Service", () => {
    expect(resources.map((r) => `${r.kind}/${r.metadata.name}`).sort()).toEqual(
      ["ConfigMap/mufold", "Deployment/mufold-fold", "Deployment/mufold-serve", "Job/mufold-setup", "Secret/mufold-credentials", "Service/mufold-serve"].sort(),
    );
  });

  it("every environment variable set (ConfigMap keys and each container's env) is a setting of the registry", () => {
    const known = registryEnvNames();
    const names = Object.keys(configMap.data!);
    for (const w of workloads) for (const c of pod(w).containers) names.push(...(c.env ?? []).map((e) => e.name));
    expect(names.length).toBeGreaterThan(10);
    for (const name of names) expect(known.has(name), `${name} is not in SETTINGS (src/config/settings.ts)`).toBe(true);
    for (const value of Object.values(configMap.data!)) expect(typeof value).toBe("string");
  });

  it("each workload reads the ConfigMap, mounts only its own Redis password from the Secret, and points REDIS_PASSWORD_FILE at it", () => {
    const ownKey = { "mufold-setup": "redis-admin-password", "mufold-fold": "redis-fold-password", "mufold-serve": "redis-reader-password" } as Record<string, string>;
    for (const w of workloads) {
      const c = only(w);
      expect(c.envFrom).toEqual([{ configMapRef: { name: configMap.metadata.name } }]);
      const volumes = (pod(w).volumes ?? []).filter((v) => v.secret !== undefined);
      expect(volumes).toHaveLength(1);
      const volume = volumes[0]!;
      expect(volume.secret!.secretName).toBe(secret.metadata.name);
      expect(volume.secret!.items!.map((i) => i.key)).toEqual([ownKey[w.metadata.name]]);
      for (const item of volume.secret!.items!) expect(Object.keys(secret.stringData!)).toContain(item.key);
      const mount = c.volumeMounts!.find((m) => m.name === volume.name)!;
      const file = c.env!.find((e) => e.name === "REDIS_PASSWORD_FILE")!.value;
      expect(file).toBe(`${mount.mountPath}/${volume.secret!.items![0]!.path}`);
      // The user is in the URL, its password in the file (never in the URL or the manifest).
      expect(c.env!.find((e) => e.name === "REDIS_URL")!.value).toMatch(/^rediss?:\/\/[^:@/]+@[^@]+$/);
    }
  });

  it("runs as the image's non-root user", () => {
    const user = Number(last(parseDockerfile(`${ROOT}/Dockerfile`).stages.at(-1)!, "USER")!.args[0]!.split(":")[0]);
    for (const w of workloads) expect(pod(w).securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: user });
  });

  it("the fold serves HTTP on its container port, alive on /healthz, ready on /readyz, endpoints the server answers", async () => {
    const c = only(fold);
    expect(c.args![0]).toBe("fold");
    const port = Number(flagValue(c.args!, "--http-port"));
    expect(flagValue(c.args!, "--http-host")).toBe("0.0.0.0");
    const http = c.ports!.find((p) => p.name === "http")!;
    expect(http.containerPort).toBe(port);
    expect(c.livenessProbe!.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(c.readinessProbe!.httpGet).toEqual({ path: "/readyz", port: "http" });
    for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) expect(await statusOf(probe!.httpGet!.path)).toBe(200);
  });

  it("serve: probes on the port it listens on, and the Service sends to that port", async () => {
    const c = only(serve);
    expect(c.args![0]).toBe("serve");
    expect(c.command).toBeUndefined(); // the image's ENTRYPOINT
    const port = Number(flagValue(c.args!, "--port"));
    expect(flagValue(c.args!, "--host")).toBe("0.0.0.0");
    expect(c.ports!.find((p) => p.name === "http")!.containerPort).toBe(port);
    expect(c.livenessProbe!.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(c.readinessProbe!.httpGet).toEqual({ path: "/readyz", port: "http" });
    for (const probe of [c.livenessProbe, c.readinessProbe]) expect(await statusOf(probe!.httpGet!.path)).toBe(200);
    const service = find("Service", "mufold-serve");
    expect(service.spec.ports!.map((p) => p.targetPort)).toEqual(["http"]);
    expect(service.spec.selector).toEqual((serve.spec.selector as { matchLabels: Record<string, string> }).matchLabels);
  });

  it("setup is a one-shot Job running `mufold setup`", () => {
    const c = only(setup);
    expect(c.args).toEqual(["setup"]);
    expect(pod(setup).restartPolicy).toBe("Never");
    expect(c.livenessProbe).toBeUndefined();
  });

  it("no more fold workers than partitions: one group, a partition per worker at most", () => {
    expect(fold.spec.replicas).toBeGreaterThan(0);
    expect(fold.spec.replicas).toBeLessThanOrEqual(Number(setting("partitions")));
  });

  it("the fold's old space and memory are the capacity formula's for the ConfigMap's settings", () => {
    const deliveries = Number(fold.metadata.annotations!["mufold/deliveries-per-cached-identity"]);
    expect(deliveries).toBeGreaterThanOrEqual(1);
    const expected = workerMemory({
      cacheSize: Number(setting("cacheSize")),
      cacheMaxBytes: Number(setting("cacheMaxBytes")),
      deliveriesPerIdentity: deliveries,
      fetchMaxBytes: Number(setting("fetchMaxBytes")),
      partitionFetchMaxBytes: Number(setting("partitionFetchMaxBytes")),
      partitionsConcurrency: Number(setting("partitionsConcurrency")),
      identitiesInFlight: Number(setting("identitiesInFlight")),
    });
    const c = only(fold);
    // The image's ENTRYPOINT with the old space added: the young generation the formula counts is there too.
    expect(c.command).toEqual(["node", ...WORKER_NODE_FLAGS, `--max-old-space-size=${expected.maxOldSpaceMiB}`, "bin/mufold.js"]);
    expect(c.resources!.limits!.memory).toBe(`${expected.limitMiB}Mi`);
    expect(c.resources!.requests!.memory).toBe(c.resources!.limits!.memory);
    // The values the manifest's comment works out by hand, so a change to the formula shows here too.
    expect(expected).toMatchObject({ maxOldSpaceMiB: 640, limitMiB: 832 });
  });

  it("the fold gets more than Kubernetes' default 30 s to finish its batch and leave the group", () => {
    expect(pod(fold).terminationGracePeriodSeconds).toBeGreaterThan(30);
  });
});
