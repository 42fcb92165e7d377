/**
 * How much of a process's RSS is V8's heap pages, from /proc/<pid>/smaps:
 * V8 maps its regular pages (every space but large objects) as anonymous
 * mappings of 256 KiB each on x64 and arm64. The total counts the pages V8
 * holds resident whether a space counts them (`heap_size_total`) or not (the
 * pages it keeps pooled for reuse), which is where a worker's RSS grows past
 * its heap total (docs/benchmarks.md, "Memory outside the V8 heap").
 */
import { readFileSync } from "node:fs";

/** V8's regular page: the size of the mappings counted. */
const V8_PAGE_BYTES = 256 * 1024;

/** Resident bytes of `pid`'s anonymous mappings of V8's page size, or null when /proc cannot tell (not Linux, gone). */
export function v8PagesResidentBytes(pid: number): number | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps`, "utf8");
  } catch {
    return null;
  }
  let counted = false;
  let kib = 0;
  for (const line of text.split("\n")) {
    // A mapping's header: "start-end perms offset dev inode [path]"; its fields follow, Rss among them.
    const header = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header !== null) {
      counted = header[3]!.trim() === "" && parseInt(header[2]!, 16) - parseInt(header[1]!, 16) === V8_PAGE_BYTES;
      continue;
    }
    const rss = counted ? /^Rss:\s+(\d+) kB$/.exec(line) : null;
    if (rss !== null) kib += Number(rss[1]);
  }
  return kib * 1024;
}
