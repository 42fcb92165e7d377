/**
 * Redis URLs in messages and in `config explain`: the password never shows,
 * whatever it contains (`@`, `:`, `%`, raw or percent-encoded), in a one-node
 * or a cluster URL. Every password below is made of pieces that contain
 * "sekrit", so any leaked fragment of it is caught.
 */
import { describe, expect, it } from "vitest";
import { openRedis, redisClientPlan } from "../../src/adapters/redis/connect.js";
import { redactRedisUrl } from "../../src/config/redis-url.js";
import { configReceiptJson } from "../../src/cli/config-explain.js";
import { redactUrl, resolveSettings, resolveSettingsWithSources } from "../../src/config/settings.js";

const PASSWORDS = ["sekritA@sekritB", "sekritA:sekritB", "sekritA%sekritB", "sekritA%40sekritB%3Asekrit", "sekritA@sekritB:sekritC%sekritD", "@sekrit", "sekrit@", "sekrit%zz"];
const USERS = ["", "folduser", "us@er", "us%3Aer", "us%25er"];
const SCHEMES = ["redis://", "rediss://", "redis+cluster://", "rediss+cluster://"];
const HOSTS: Record<string, string> = { "redis://": "redis.example:6379/2", "rediss://": "redis.example:6380", "redis+cluster://": "h1:7100,h2:7101", "rediss+cluster://": "h1:7100" };

/** Every URL: scheme × user × password, the password written raw (as typed) and percent-encoded. */
function urls(): { url: string; host: string; user: string }[] {
  const out: { url: string; host: string; user: string }[] = [];
  for (const scheme of SCHEMES) {
    for (const user of USERS) {
      for (const password of PASSWORDS) {
        for (const written of [password, encodeURIComponent(password)]) out.push({ url: `${scheme}${user}:${written}@${HOSTS[scheme]}`, host: HOSTS[scheme]!.split(",")[0]!, user });
      }
    }
  }
  return out;
}

/** The error message of a throwing call, or "" when it does not throw. */
function errorOf(f: () => unknown): string {
  try {
    f();
    return "";
  } catch (err) {
    return (err as Error).message;
  }
}

describe("redactUrl / redactRedisUrl", () => {
  it("hides every password and keeps the host (and the user, for messages)", () => {
    for (const { url, host, user } of urls()) {
      const shown = redactUrl(url);
      expect(shown, url).not.toContain("sekrit");
      expect(shown, url).toContain(host.split(":")[0]);
      const plain = redactRedisUrl(url, { keepUser: false });
      expect(plain, url).not.toContain("sekrit");
      if (user === "folduser") expect(shown, url).toMatch(/\/\/folduser:\*\*\*@/);
      if (user !== "") expect(plain, url).not.toContain(user);
    }
  });

  it("leaves a URL without credentials as it is, and shows '***' for a password alone", () => {
    expect(redactUrl("redis://127.0.0.1:6379")).toBe("redis://127.0.0.1:6379");
    expect(redactUrl("redis+cluster://h1:7100,h2:7101")).toBe("redis+cluster://h1:7100,h2:7101");
    expect(redactUrl("redis://:pw-sekrit@h:6379/1")).toBe("redis://:***@h:6379/1");
    expect(redactUrl("redis+cluster://fold:pw-sekrit@h1:7100")).toBe("redis+cluster://fold:***@h1:7100");
  });

  it("what a URL parser would misread (a '/', '#' or '?' in the password) loses everything before its last '@'", () => {
    for (const url of ["redis://u:12/sekrit@h:6379", "redis://u:1#sekrit@h:6379", "redis://u:sekrit?x@h:6379", "redis://u:sek/rit@h", "not a url sekrit@h:6379"]) {
      expect(redactUrl(url), url).not.toContain("sekrit");
      expect(redactRedisUrl(url, { keepUser: false }), url).not.toContain("sekrit");
    }
    expect(redactUrl("redis://h:6379/0?password=sekrit&db=1")).toBe("redis://h:6379/0?password=***&db=1");
  });
});

describe("no password in errors or in config explain", () => {
  it("invalid settings name the URL without its password", () => {
    // Cluster URLs whose credentials hold a raw '@' or '/', or a seed without a port, are refused.
    for (const url of ["redis+cluster://u:sekritA@sekritB@h1:7100", "redis+cluster://u:sekrit@h1", "redis+cluster://u:sek/rit@h1:7100", "redis+cluster://u:sekrit%zz@h1:7100", "ftp://u:sekrit@h"]) {
      const message = errorOf(() => resolveSettings({}, { REDIS_URL: url }));
      expect(message, url).toMatch(/^invalid setting redisUrl/);
      expect(message, url).not.toContain("sekrit");
    }
    const twice = errorOf(() => redisClientPlan({ url: "redis://u:sekritA@sekritB@h:6379", password: "other" }));
    expect(twice).toMatch(/already has a password/);
    expect(twice).not.toContain("sekrit");
  });

  it("the config explain receipt shows no password and no user", () => {
    for (const { url, user } of urls()) {
      let text: string;
      try {
        text = configReceiptJson(resolveSettingsWithSources({}, { REDIS_URL: url }));
      } catch (err) {
        // Refused settings say why without the password (above); nothing more to show.
        expect((err as Error).message, url).not.toContain("sekrit");
        continue;
      }
      expect(text, url).not.toContain("sekrit");
      if (user.length > 3) expect(text, url).not.toContain(user);
      expect(text).toContain('"redisPassword":{"present":true');
    }
  });

  it("cannot-reach errors name the endpoint without the password", async () => {
    const url = `redis://fold:${encodeURIComponent("sekritA@sekritB:sekritC")}@127.0.0.1:1`;
    const message = await openRedis({ url }, 300).then(
      () => "",
      (err: Error) => err.message,
    );
    expect(message).toMatch(/^cannot reach Redis at redis:\/\/fold:\*\*\*@127\.0\.0\.1:1 within 300 ms: /);
    expect(message).not.toContain("sekrit");
  });
});
