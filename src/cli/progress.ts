/** A one-line progress bar on a terminal; silent elsewhere (machines read the JSON summary). */
export function progressBar(label: string, stream: NodeJS.WriteStream = process.stderr) {
  let last = 0;
  return {
    update(done: number, total: number, elapsedSeconds: number): void {
      if (!stream.isTTY) return;
      const now = Date.now();
      if (now - last < 100 && done < total) return;
      last = now;
      const width = 30;
      const ratio = total > 0 ? Math.min(1, done / total) : 1;
      const filled = Math.round(ratio * width);
      const rate = elapsedSeconds > 0 ? Math.round(done / elapsedSeconds) : 0;
      stream.write(`\r${label} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total} ${(ratio * 100).toFixed(0)}% ${rate}/s `);
    },
    done(): void {
      if (stream.isTTY) stream.write("\n");
    },
  };
}
