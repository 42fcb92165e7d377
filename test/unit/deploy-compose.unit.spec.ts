/**
 * infra/docker-compose.yml, read as data (no Docker engine needed): the mufold
 * services are wired as docs/deployment.md says (setup once, then fold and
 * serve, each with a health check on an endpoint the server answers), they set
 * only settings the registry knows, and the broker's controller port follows
 * its Kafka port exactly as infra/lib.sh (infra/up.sh) computes it.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { flagValue, registryEnvNames, statusOf, yamlDocuments } from "../support/deploy.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const COMPOSE = `${ROOT}/infra/docker-compose.yml`;

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string | number | null>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test?: string[]; disable?: boolean };
  profiles?: string[];
  ports?: string[];
}

const compose = yamlDocuments(COMPOSE)[0] as { services: Record<string, Service> };
const services = compose.services;
const MUFOLD = ["setup", "fold", "serve"] as const;

/** Compose's interpolation of `${VAR:-default}`, `${VAR}` and `$$` against `env`. */
function interpolate(text: string, env: Record<string, string>): string {
  return text.replace(/\$\$|\$\{(\w+)(?::-([^}]*))?\}/g, (all, name: string | undefined, fallback: string | undefined) => {
    if (all === "$$") return "$";
    const v = env[name!];
    return v !== undefined && v !== "" ? v : (fallback ?? "");
  });
}

/** The URL a `node -e "fetch('…')…"` health check asks for. */
function checkedUrl(test: readonly string[]): URL {
  expect(test.slice(0, 3)).toEqual(["CMD", "node", "-e"]);
  const m = /fetch\('([^']+)'/.exec(test[3]!);
  expect(m, `no fetch('…') in ${test[3]}`).not.toBeNull();
  return new URL(m![1]!);
}

describe("infra/docker-compose.yml: the mufold services", () => {
  it("setup, fold and serve run the image of the repository's Dockerfile, only with the profile mufold", () => {
    for (const name of MUFOLD) {
      const s = services[name]!;
      expect(s, name).toBeDefined();
      expect(s.build).toEqual({ context: "..", dockerfile: "Dockerfile" });
      expect(s.profiles).toEqual(["mufold"]);
    }
    // Kafka and Redis alone start without a profile, as before.
    expect(services.kafka!.profiles).toBeUndefined();
    expect(services.redis!.profiles).toBeUndefined();
  });

  it("setup runs once after Kafka and Redis are healthy; fold and serve start after it succeeded", () => {
    expect(services.setup!.command).toEqual(["setup"]);
    expect(services.setup!.depends_on).toEqual({ kafka: { condition: "service_healthy" }, redis: { condition: "service_healthy" } });
    expect(services.fold!.command![0]).toBe("fold");
    expect(services.serve!.command![0]).toBe("serve");
    for (const name of ["fold", "serve"]) expect(services[name]!.depends_on).toEqual({ setup: { condition: "service_completed_successfully" } });
  });

  it("fold and serve listen on all interfaces and check, on the port they listen on, an endpoint the server answers", async () => {
    const listen = {
      fold: { port: flagValue(services.fold!.command!, "--http-port"), host: flagValue(services.fold!.command!, "--http-host") },
      serve: { port: flagValue(services.serve!.command!, "--port"), host: flagValue(services.serve!.command!, "--host") },
    };
    for (const [name, { port, host }] of Object.entries(listen)) {
      expect(port, `${name} has no HTTP port`).toMatch(/^\d+$/);
      expect(host).toBe("0.0.0.0");
      const url = checkedUrl(services[name]!.healthcheck!.test!);
      expect(url.port).toBe(port);
      expect(["/healthz", "/readyz"]).toContain(url.pathname);
      expect(await statusOf(url.pathname)).toBe(200);
      // The published port reaches the one it listens on.
      expect(services[name]!.ports!.some((p) => p.endsWith(`:${port}`))).toBe(true);
    }
    expect(await statusOf("/no-such-endpoint")).toBe(404);
  });

  it("every KAFKA_*, REDIS_* and MUFOLD_* variable they set is a setting of the registry", () => {
    const known = registryEnvNames();
    let checked = 0;
    for (const name of MUFOLD) {
      const env = services[name]!.environment ?? {};
      expect(Object.keys(env).length, `${name} sets no environment`).toBeGreaterThan(0);
      for (const key of Object.keys(env)) {
        if (!/^(KAFKA|REDIS|MUFOLD)_/.test(key)) continue;
        expect(known.has(key), `${name}: ${key} is not in SETTINGS (src/config/settings.ts)`).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(0);
    // In-network endpoints: Kafka's INTERNAL listener and the redis service.
    expect(services.fold!.environment!.KAFKA_BROKERS).toBe("kafka:29092");
    expect(services.fold!.environment!.REDIS_URL).toBe("redis://redis:6379");
  });
});

describe("infra/docker-compose.yml: the broker's ports follow infra/lib.sh", () => {
  const kafka = services.kafka!;

  /** The ports infra/lib.sh (sourced by infra/up.sh) derives from this environment. */
  function upShPorts(env: Record<string, string>): { kafka: string; controller: string } {
    const out = execFileSync("bash", ["--norc", "--noprofile", "-c", `source "${ROOT}/infra/lib.sh" && echo "$KAFKA_PORT $KAFKA_CONTROLLER_PORT"`], { env: { PATH: process.env.PATH ?? "", ...env }, encoding: "utf8" });
    const [k, c] = out.trim().split(" ") as [string, string];
    return { kafka: k, controller: c };
  }

  /** What the kafka service's command exports before it starts the broker, in the environment compose gives it. */
  function brokerListeners(hostEnv: Record<string, string>): Record<string, string> {
    const [sh, dashC, script] = kafka.command as [string, string, string];
    expect([sh, dashC]).toEqual(["/bin/sh", "-c"]);
    const lines = interpolate(script, hostEnv).trimEnd().split("\n");
    expect(lines.at(-1)).toBe("exec /etc/kafka/docker/run");
    const probe = [...lines.slice(0, -1), `printf '%s\\n' "$KAFKA_LISTENERS" "$KAFKA_ADVERTISED_LISTENERS" "$KAFKA_CONTROLLER_QUORUM_VOTERS"`].join("\n");
    const containerEnv = Object.fromEntries(Object.entries(kafka.environment!).map(([k, v]) => [k, interpolate(String(v ?? ""), hostEnv)]));
    const [listeners, advertised, voters] = execFileSync("/bin/sh", ["-c", probe], { env: { PATH: process.env.PATH ?? "", ...containerEnv }, encoding: "utf8" }).trimEnd().split("\n") as [string, string, string];
    return { listeners, advertised, voters };
  }

  const cases: Record<string, string>[] = [{}, { MUFOLD_KAFKA_PORT: "19092" }, { MUFOLD_KAFKA_PORT: "19092", MUFOLD_KAFKA_CONTROLLER_PORT: "19500" }, { MUFOLD_KAFKA_CONTROLLER_PORT: "9999" }];
  for (const env of cases) {
    it(`with ${JSON.stringify(env)}`, () => {
      const expected = upShPorts(env);
      const got = brokerListeners(env);
      expect(got.listeners).toBe(`PLAINTEXT://:${expected.kafka},INTERNAL://:29092,CONTROLLER://localhost:${expected.controller}`);
      expect(got.voters).toBe(`1@localhost:${expected.controller}`);
      expect(got.advertised).toBe(`PLAINTEXT://127.0.0.1:${expected.kafka},INTERNAL://kafka:29092`);
      // The published port and the health check use the same Kafka port.
      expect(kafka.ports!.map((p) => interpolate(p, env))).toEqual([`127.0.0.1:${expected.kafka}:${expected.kafka}`]);
      expect(interpolate(kafka.healthcheck!.test!.join(" "), env)).toContain(`--bootstrap-server 127.0.0.1:${expected.kafka} `);
      expect(new Set([expected.kafka, expected.controller, "29092"]).size).toBe(3);
    });
  }
});
