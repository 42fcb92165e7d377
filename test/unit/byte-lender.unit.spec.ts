/** Lent bytes are written again only after they were given back, and never while a view is out. */
import { describe, expect, it } from "vitest";
import { ByteLender } from "../../src/core/byte-lender.js";

/** `length` bytes, each `fill`. */
function bytesOf(fill: number, length: number): Buffer {
  return Buffer.alloc(length, fill);
}

describe("ByteLender", () => {
  it("lends a copy of the source's range, which later writes to the source do not change", () => {
    const lender = new ByteLender(4096);
    const source = Buffer.from("xx*1\r\n$4\r\nPING\r\nthe rest is not lent");
    const view = lender.lend(source, 2, 16);
    source.fill(0);
    expect(view.toString("latin1")).toBe("*1\r\n$4\r\nPING\r\n");
  });

  it("writes a slab again from its start once all its views were given back, not before", () => {
    const lender = new ByteLender(4096);
    const a = lender.lend(bytesOf(1, 100), 0, 100);
    const b = lender.lend(bytesOf(2, 100), 0, 100);
    lender.giveBack(a);
    const c = lender.lend(bytesOf(3, 100), 0, 100); // b is out: after b, not over a
    expect(c.byteOffset).toBeGreaterThan(b.byteOffset);
    expect(b.equals(bytesOf(2, 100))).toBe(true);
    lender.giveBack(b);
    lender.giveBack(c);
    const d = lender.lend(bytesOf(4, 100), 0, 100);
    expect(d.buffer).toBe(a.buffer);
    expect(d.byteOffset).toBe(a.byteOffset);
    expect(lender.out).toBe(1);
  });

  it("never writes over a view not given back, across more slabs than it keeps", () => {
    const lender = new ByteLender(4096, 1);
    const size = 1000; // four a slab
    const out = Array.from({ length: 40 }, (_, i) => ({ view: lender.lend(bytesOf(i, size), 0, size), fill: i }));
    for (let i = 0; i < out.length; i += 2) lender.giveBack(out[i]!.view);
    // A slab whose views all went back is filled again: the first slab (views 0–3) has 1 and 3 out, so none is.
    for (let i = 0; i < 40; i++) lender.lend(bytesOf(200, size), 0, size);
    for (let i = 1; i < out.length; i += 2) expect(out[i]!.view.equals(bytesOf(out[i]!.fill, size))).toBe(true);
    expect(lender.out).toBe(20 + 40);
  });

  it("keeps given-back slabs for reuse, at most keptSlabs of them", () => {
    const lender = new ByteLender(4096, 1);
    const size = 1000; // four a slab
    const views = Array.from({ length: 12 }, () => lender.lend(bytesOf(9, size), 0, size)); // three slabs, the third filling
    const slabs = [views[0]!.buffer, views[4]!.buffer, views[8]!.buffer];
    expect(new Set(slabs).size).toBe(3);
    for (const v of views.slice(0, 8)) lender.giveBack(v); // the first two slabs are free: one is kept
    const next = lender.lend(bytesOf(9, size), 0, size); // the third is full: the kept one is due
    expect(slabs.slice(0, 2)).toContain(next.buffer);
    expect(next.byteOffset).toBe(0);
    for (let i = 0; i < 3; i++) expect(lender.lend(bytesOf(9, size), 0, size).buffer).toBe(next.buffer);
    const beyond = lender.lend(bytesOf(9, size), 0, size); // the kept one is full: a new slab, not the dropped one
    expect(slabs).not.toContain(beyond.buffer);
  });

  it("does not count the slab it is filling among its spares when that slab empties", () => {
    const lender = new ByteLender(4096);
    lender.giveBack(lender.lend(bytesOf(1, 1000), 0, 1000)); // the filling slab has nothing out
    const views = Array.from({ length: 5 }, (_, i) => lender.lend(bytesOf(i, 1000), 0, 1000)); // four fill it, the fifth needs another
    expect(views[4]!.buffer).not.toBe(views[0]!.buffer);
    views.forEach((v, i) => expect(v.equals(bytesOf(i, 1000))).toBe(true));
  });

  it("throws on a view given back twice once its slab has nothing out (it would free room another view holds)", () => {
    const lender = new ByteLender(4096);
    const a = lender.lend(bytesOf(1, 10), 0, 10);
    lender.giveBack(a);
    expect(() => lender.giveBack(a)).toThrow(/given back twice/);
  });

  it("gives a range over a quarter of a slab bytes of its own, and ignores a view it did not lend", () => {
    const lender = new ByteLender(4096);
    const big = lender.lend(bytesOf(7, 1025), 0, 1025);
    expect(big.buffer.byteLength).not.toBe(4096);
    expect(big.equals(bytesOf(7, 1025))).toBe(true);
    expect(lender.out).toBe(0);
    const small = lender.lend(bytesOf(1, 10), 0, 10);
    lender.giveBack(big);
    lender.giveBack(Buffer.from(small));
    expect(lender.out).toBe(1);
  });
});
