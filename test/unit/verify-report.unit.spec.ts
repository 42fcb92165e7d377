/**
 * `replay --verify --report`: verify's per-identity results (consumers/verify/verify.ts,
 * against a store double that counts reads) and the page written from them
 * (consumers/verify/verify-report.ts): well-formed, self-contained, with the statuses,
 * the first differing offset and both byte windows escaped.
 */
import { describe, expect, it } from "vitest";
import type { ReplaySummary } from "../../consumers/replay/replay-summary.js";
import { byteDifference, firstDifference, VerifyDetails, verifyGenerations, type VerifyReport } from "../../consumers/verify/verify.js";
import { verifyReportHtml } from "../../consumers/verify/verify-report.js";
import { byClass, findAll, parseXml, textOf, type XmlElement } from "../support/xml.js";

const LIVE = 3;
const REBUILT = 4;
const id = (n: number) => `mur_${String(n).padStart(64, "0")}`;

/** Two generations in memory, with the calls verify makes; counts packet reads per generation and identity. */
function storeDouble(generations: Record<number, Map<string, { meta: Record<string, string>; packet: string | null }>>) {
  const reads = new Map<string, number>();
  const store = {
    generationFields: async () => new Map<string, string>(),
    listIdentities: async (g: number) => [...generations[g]!.keys()].sort(),
    meta: async (g: number, identity: string) => generations[g]!.get(identity)?.meta ?? {},
    read: async (g: number, identity: string) => {
      reads.set(`${g}/${identity}`, (reads.get(`${g}/${identity}`) ?? 0) + 1);
      return generations[g]!.get(identity)?.packet ?? null;
    },
  };
  return { store: { identities: store, control: store }, reads };
}

const W = { "w:t:0": "5" };
// The packets of identity 2 differ in one byte: the test knows where, from the strings it wrote.
const LIVE_2 = '{"note":"a<b & c, then enough text to start the window","v":1,"tail":"x<y & z' + "x".repeat(60) + '"}';
const REBUILT_2 = '{"note":"a<b & c, then enough text to start the window","v":2,"tail":"x<y & z' + "x".repeat(60) + '"}';
const OFFSET_2 = LIVE_2.indexOf('"v":1') + 4;

function twoGenerations() {
  return storeDouble({
    [LIVE]: new Map([
      [id(1), { meta: W, packet: '{"p":1}' }],
      [id(2), { meta: W, packet: LIVE_2 }],
      [id(3), { meta: W, packet: '{"only":"live"}' }],
      [id(5), { meta: W, packet: '{"p":5}' }],
      [id(6), { meta: { "w:t:0": "9" }, packet: '{"p":6}' }],
    ]),
    [REBUILT]: new Map([
      [id(1), { meta: W, packet: '{"p":1}' }],
      [id(2), { meta: W, packet: REBUILT_2 }],
      [id(4), { meta: W, packet: '{"only":"rebuilt"}' }],
      [id(5), { meta: W, packet: '{"p":5}' }],
      [id(6), { meta: W, packet: '{"p":6}' }],
    ]),
  });
}

describe("first differing byte", () => {
  it("counts UTF-8 bytes, not characters; a prefix differs at the shorter length; equal is -1", () => {
    const bytes = (s: string) => Buffer.from(s, "utf8");
    expect(firstDifference(bytes("abc"), bytes("abc"))).toBe(-1);
    expect(firstDifference(bytes("abc"), bytes("abd"))).toBe(2);
    expect(firstDifference(bytes("ab"), bytes("abc"))).toBe(2);
    // "é" is C3 A9 and "è" C3 A8: after "x" (1 byte) and the shared C3, the first differing byte is at 2.
    expect(firstDifference(bytes("xé"), bytes("xè"))).toBe(2);
    const d = byteDifference("é!", "è!", 1)!;
    expect({ offset: d.offset, start: d.start, live: [...d.live], rebuilt: [...d.rebuilt] }).toEqual({ offset: 1, start: 0, live: [0xc3, 0xa9, 0x21], rebuilt: [0xc3, 0xa8, 0x21] });
    expect(byteDifference("same", "same")).toBeUndefined();
    expect(byteDifference(null, "x")).toMatchObject({ offset: 0, liveLength: null, rebuiltLength: 1 });
  });
});

describe("verifyGenerations with details", () => {
  it("one status per identity, in identity order, the mismatch's bytes kept, and each packet read once", async () => {
    const { store, reads } = twoGenerations();
    const details = new VerifyDetails(1);
    const report = await verifyGenerations(store, LIVE, REBUILT, details);
    expect(report).toMatchObject({ ok: false, identities: 6, compared: 3, mismatches: 1, notComparable: 3, onlyInLive: 1, onlyInRebuilt: 1, mismatchedIdentities: [id(2)] });
    expect(details.notEqual.map((r) => [r.identity, r.status])).toEqual([
      [id(2), "bytes_differ"],
      [id(3), "only_in_live"],
      [id(4), "only_in_rebuilt"],
      [id(6), "watermarks_differ"],
    ]);
    expect(details.equal).toBe(2);
    expect(details.equalListed).toEqual([id(1)]); // at most 1 listed, the first by identity
    const diff = details.notEqual[0]!.difference!;
    expect(diff.offset).toBe(OFFSET_2);
    expect(Buffer.from(diff.live).toString()).toBe(LIVE_2.slice(OFFSET_2 - 32, OFFSET_2 + 33));
    expect(Buffer.from(diff.rebuilt).toString()).toBe(REBUILT_2.slice(OFFSET_2 - 32, OFFSET_2 + 33));
    // The stdout report names the offset too.
    expect(report.failures.find((f) => f.identity === id(2))?.detail).toBe(`first differing byte at offset ${OFFSET_2} (live ${LIVE_2.length} bytes, rebuilt ${REBUILT_2.length} bytes)`);
    // Packets are read only for identities on both sides with equal watermarks, once per side.
    expect(Object.fromEntries(reads)).toEqual(Object.fromEntries([1, 2, 5].flatMap((n) => [[`${LIVE}/${id(n)}`, 1], [`${REBUILT}/${id(n)}`, 1]])));
  });

  it("keeps the bytes of at most maxDifferences mismatches, and counts the others", async () => {
    const gen = (v: string) => new Map([1, 2, 3].map((n) => [id(n), { meta: W, packet: `{"v":"${v}"}` }]));
    const { store } = storeDouble({ [LIVE]: gen("a"), [REBUILT]: gen("b") });
    const details = new VerifyDetails(10, 2);
    await verifyGenerations(store, LIVE, REBUILT, details);
    expect(details.notEqual.map((r) => r.difference !== undefined)).toEqual([true, true, false]);
    expect(details.differencesOmitted).toBe(1);
  });
});

function summaryOf(verify: VerifyReport): ReplaySummary {
  return {
    liveGeneration: LIVE,
    rebuiltGeneration: REBUILT,
    records: 1234,
    deliveries: 1200,
    duplicatesSkipped: 34,
    dlq: 0,
    dlqByReason: {},
    identities: 5,
    seconds: 2,
    recordsPerSecond: 617,
    workers: 1,
    rebuildSeconds: 1,
    verify,
    coverage: null,
    verified: verify.ok,
    mismatches: verify.mismatches + verify.notComparable,
    promoted: false,
  };
}

const times = { startedAt: new Date("2026-11-30T10:00:00.000Z"), finishedAt: new Date("2026-11-30T10:00:07.500Z") };

function summaryRows(page: XmlElement): Map<string, string> {
  const table = byClass(page, "summary")[0]!;
  return new Map(findAll(table, (e) => e.name === "tr").map((tr) => [textOf(tr.children.find((c): c is XmlElement => typeof c !== "string" && c.name === "th")!), textOf(tr.children.find((c): c is XmlElement => typeof c !== "string" && c.name === "td")!)]));
}

describe("the report page", () => {
  it("a mismatch: well-formed, self-contained, the statuses, the offset and both windows escaped with the byte marked", async () => {
    const { store } = twoGenerations();
    const details = new VerifyDetails(1);
    const report = await verifyGenerations(store, LIVE, REBUILT, details);
    const html = verifyReportHtml({ summary: summaryOf(report), details, topic: "obs<&>", prefix: "mufold", ...times });

    expect(html.startsWith("<!DOCTYPE html>")).toBe(true);
    const page = parseXml(html);
    expect(page.name).toBe("html");
    // Self-contained: no scripts, no external references.
    expect(findAll(page, (e) => e.name === "script" || e.name === "link" || e.name === "img")).toEqual([]);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html).not.toContain("@import");
    expect(html).not.toContain("url(");

    const rows = summaryRows(page);
    expect(rows.get("verdict")).toBe("not verified");
    expect(rows.get("topic")).toBe("obs<&>");
    expect(html).toContain("obs&lt;&amp;&gt;");
    expect([rows.get("live generation"), rows.get("rebuilt generation")]).toEqual(["3", "4"]);
    expect([rows.get("compared"), rows.get("equal"), rows.get("bytes differ"), rows.get("only in live"), rows.get("only in rebuilt"), rows.get("watermarks differ")]).toEqual(["3", "2", "1", "1", "1", "1"]);
    expect(rows.get("reason")).toContain("bytes_differ: 1 identity");
    expect(rows.get("started")).toBe("2026-11-30T10:00:00.000Z");
    expect(rows.get("finished")).toContain("2026-11-30T10:00:07.500Z");

    const status = new Map(findAll(page, (e) => e.attrs["data-identity"] !== undefined && e.attrs["data-status"] !== undefined).map((e) => [e.attrs["data-identity"], e.attrs["data-status"]]));
    expect(Object.fromEntries(status)).toEqual({ [id(1)]: "equal", [id(2)]: "bytes_differ", [id(3)]: "only_in_live", [id(4)]: "only_in_rebuilt", [id(6)]: "watermarks_differ" });
    // The equal ones behind a <details>, with how many there are and how many are listed.
    const equal = findAll(page, (e) => e.name === "details")[0]!;
    expect(textOf(findAll(equal, (e) => e.name === "summary")[0]!)).toBe("2 identities equal (the first 1 by identity listed; at most 1 are)");

    const [mismatch] = byClass(page, "mismatch");
    expect(mismatch!.attrs["data-identity"]).toBe(id(2));
    expect(textOf(byClass(mismatch!, "offset")[0]!)).toBe(String(OFFSET_2));
    const windows = Object.fromEntries(byClass(mismatch!, "bytes").map((b) => [b.attrs["data-side"], b]));
    // The window as text is the packet's bytes around the offset; the raw HTML has them escaped.
    expect(textOf(windows.live!)).toBe(LIVE_2.slice(OFFSET_2 - 32, OFFSET_2 + 33));
    expect(textOf(windows.rebuilt!)).toBe(REBUILT_2.slice(OFFSET_2 - 32, OFFSET_2 + 33));
    expect(html).toContain("x&lt;y &amp; z");
    expect(html).not.toContain("x<y & z");
    expect(byClass(windows.live!, "diff").map(textOf)).toEqual(["1"]);
    expect(byClass(windows.rebuilt!, "diff").map(textOf)).toEqual(["2"]);
  });

  it("bytes that are not printable ASCII are shown as \\xNN; a side that ends early is marked at its end", () => {
    const details = new VerifyDetails();
    details.record({ identity: id(7), status: "bytes_differ", difference: byteDifference("ab\ncé", "ab\nc")! });
    const verify: VerifyReport = { ok: false, identities: 1, compared: 1, mismatches: 1, notComparable: 0, onlyInLive: 0, onlyInRebuilt: 0, behindInLive: 0, missingInLive: 0, mismatchedIdentities: [id(7)], failures: [] };
    const page = parseXml(verifyReportHtml({ summary: summaryOf(verify), details, topic: "t", prefix: "p", ...times }));
    const windows = Object.fromEntries(byClass(page, "bytes").map((b) => [b.attrs["data-side"], b]));
    expect(textOf(windows.live!)).toBe("ab\\x0ac\\xc3\\xa9");
    expect(byClass(windows.live!, "diff").map(textOf)).toEqual(["\\xc3"]);
    expect(textOf(windows.rebuilt!)).toBe("ab\\x0ac(end of packet)");
    expect(textOf(byClass(page, "offset")[0]!)).toBe("4");
  });

  it("a verified run says verified; a run that could not compare says why", () => {
    const ok: VerifyReport = { ok: true, identities: 2, compared: 2, mismatches: 0, notComparable: 0, onlyInLive: 0, onlyInRebuilt: 0, behindInLive: 0, missingInLive: 0, mismatchedIdentities: [], failures: [] };
    const details = new VerifyDetails();
    details.record({ identity: id(1), status: "equal" });
    details.record({ identity: id(2), status: "equal" });
    const page = parseXml(verifyReportHtml({ summary: summaryOf(ok), details, topic: "t", prefix: "p", ...times }));
    expect(summaryRows(page).get("verdict")).toBe("verified");
    expect(textOf(findAll(page, (e) => e.attrs.id === "verdict")[0]!)).toBe("verified");
    expect(byClass(page, "mismatch")).toEqual([]);

    const none: VerifyReport = { ...ok, ok: false, identities: 0, compared: 0, failures: [{ reason: "no_live_generation", detail: "there is no live generation" }] };
    const failed = parseXml(verifyReportHtml({ summary: { ...summaryOf(none), liveGeneration: null }, details: new VerifyDetails(), topic: "t", prefix: "p", ...times }));
    const rows = summaryRows(failed);
    expect(rows.get("verdict")).toBe("not verified");
    expect(rows.get("reason")).toBe("no_live_generation: there is no live generation");
    expect(rows.get("live generation")).toBe("none");
  });
});
