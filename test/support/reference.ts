// Client for test/support/reference-oracle.py: the reference implementation
// (PyPI loopx==2.1.1 in <repo>/.cache/reference-venv) as a long-running
// JSON-lines process. Requests are pipelined; responses arrive in order.
//
// vitest: `globalSetup: ["test/support/reference.ts"]` runs `setup`
// (= ensureReference) once; each test file then does
//   const oracle = await ReferenceOracle.start(); ... await oracle.close();
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import type { Socket } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const REFERENCE_LOOPX_VERSION = "2.1.1";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const REFERENCE_VENV = join(REPO_ROOT, ".cache", "reference-venv");
export const REFERENCE_PYTHON = join(REFERENCE_VENV, "bin", "python");
export const ORACLE_SCRIPT = join(REPO_ROOT, "test", "support", "reference-oracle.py");
const SETUP_SCRIPT = join(REPO_ROOT, "scripts", "setup-reference.sh");
const STAMP = join(REFERENCE_VENV, ".mufold-reference-stamp");

/** Response of {"op":"project"}: the reference CLI's exit code and canonical (sorted-key) JSON payload. */
export interface ProjectResponse {
  exit: number;
  /** json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False) */
  stdout?: string;
  /** Exact text the real CLI prints (insertion-ordered keys + "\n"); only with {cli_stdout: true}. */
  cli_stdout?: string;
  /** "<ExcType>: <message>" when an exception escaped the CLI handler (the real CLI would exit 1 with a traceback). */
  crash?: string;
}

function setupHint(detail: string): Error {
  return new Error(
    "The loopx reference oracle is not available.\n" +
      `  ${detail.trim().split("\n").join("\n  ")}\n` +
      "Differential tests need CPython 3.11 (python3.11 on PATH, with the venv module) and\n" +
      `access to PyPI for 'pip install loopx==${REFERENCE_LOOPX_VERSION}'. Install Python 3.11\n` +
      "(e.g. 'apt-get install python3.11 python3.11-venv' or 'pyenv install 3.11'), then run\n" +
      "  bash scripts/setup-reference.sh",
  );
}

function referenceReady(): boolean {
  try {
    return (
      existsSync(REFERENCE_PYTHON) &&
      readFileSync(STAMP, "utf8").trim() === `loopx==${REFERENCE_LOOPX_VERSION}`
    );
  } catch {
    return false;
  }
}

let ensured: Promise<void> | undefined;

/** Make sure the reference venv exists (runs scripts/setup-reference.sh if needed). Throws with install instructions. */
export function ensureReference(): Promise<void> {
  ensured ??= (async () => {
    if (referenceReady()) return;
    const r = spawnSync("bash", [SETUP_SCRIPT], {
      cwd: REPO_ROOT,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    if (r.error) throw setupHint(`could not run ${SETUP_SCRIPT}: ${r.error.message}`);
    if (r.status !== 0 || !referenceReady()) {
      throw setupHint(`scripts/setup-reference.sh failed (exit ${String(r.status)}):\n${r.stderr || r.stdout}`);
    }
  })();
  ensured.catch(() => {
    ensured = undefined; // allow a retry after the user fixes the machine
  });
  return ensured;
}

/** vitest globalSetup entry point. */
export { ensureReference as setup };

interface Pending {
  resolve: (value: unknown) => void;
  reject: (reason: Error) => void;
}

export class ReferenceOracle {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pending: Pending[] = [];
  private buffer = "";
  private stderrTail = "";
  private exited = false;
  private exitError: Error | undefined;
  private readonly exitPromise: Promise<void>;

  private constructor() {
    this.child = spawn(REFERENCE_PYTHON, [ORACLE_SCRIPT], {
      cwd: REPO_ROOT,
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", PYTHONUNBUFFERED: "1" },
    });
    this.child.stdout.setEncoding("utf8");
    this.child.stderr.setEncoding("utf8");
    this.child.stdout.on("data", (chunk: string) => this.onData(chunk));
    this.child.stderr.on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-8000);
    });
    this.child.stdin.on("error", () => {
      /* EPIPE after the process died: reported through 'exit' */
    });
    const gone = (why: string): void => {
      if (this.exited) return;
      this.exited = true;
      this.exitError = new Error(
        `reference oracle ${why}` + (this.stderrTail ? `\n--- stderr ---\n${this.stderrTail}` : ""),
      );
      this.failAll(this.exitError);
    };
    this.exitPromise = new Promise<void>((resolveExit) => {
      this.child.on("error", (err) => {
        gone(`failed: ${err.message}`);
        resolveExit();
      });
      this.child.on("close", (code, signal) => {
        gone(`exited (code ${String(code)}, signal ${String(signal)})`);
        resolveExit();
      });
    });
    // No more responses can arrive once stdout is closed: fail pending requests now.
    this.child.stdout.on("close", () => {
      const code = this.child.exitCode;
      const signal = this.child.signalCode;
      gone(code === null && signal === null ? "closed its output" : `exited (code ${String(code)}, signal ${String(signal)})`);
    });
    // Do not keep the event loop alive while idle; requests ref the handles again.
    this.setRef(false);
  }

  /** Spawn the oracle (ensuring the venv first) and wait until it answers a ping. */
  static async start(): Promise<ReferenceOracle> {
    await ensureReference();
    const oracle = new ReferenceOracle();
    try {
      const pong = await oracle.request<{ ok: boolean; loopx?: string }>({ op: "ping" });
      if (!pong.ok || pong.loopx !== REFERENCE_LOOPX_VERSION) {
        throw new Error(`unexpected oracle ping response: ${JSON.stringify(pong)}`);
      }
    } catch (err) {
      await oracle.close();
      throw setupHint(err instanceof Error ? err.message : String(err));
    }
    return oracle;
  }

  /** Number of requests in flight. */
  get inFlight(): number {
    return this.pending.length;
  }

  request<T = unknown>(req: object): Promise<T> {
    if (this.exited) {
      return Promise.reject(this.exitError ?? new Error("reference oracle is closed"));
    }
    let line: string;
    try {
      line = JSON.stringify(req);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    if (line === undefined || line.includes("\n")) {
      return Promise.reject(new Error("request must serialize to one JSON line"));
    }
    return new Promise<T>((resolveReq, rejectReq) => {
      if (this.pending.length === 0) this.setRef(true);
      this.pending.push({ resolve: resolveReq as (value: unknown) => void, reject: rejectReq });
      this.child.stdin.write(line + "\n");
    });
  }

  /** Convenience: run the real CLI branch on one input text. */
  project(input: string, opts: { cliStdout?: boolean } = {}): Promise<ProjectResponse> {
    return this.request<ProjectResponse>({
      op: "project",
      input,
      ...(opts.cliStdout ? { cli_stdout: true } : {}),
    });
  }

  /** Close stdin, wait for the process to exit (kill it after 5 s). Pending requests are rejected. */
  async close(): Promise<void> {
    if (!this.exited) {
      this.setRef(true);
      this.child.stdin.end();
      const timer = setTimeout(() => {
        if (!this.exited) this.child.kill("SIGKILL");
      }, 5000);
      await this.exitPromise;
      clearTimeout(timer);
    }
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + 1);
      const waiter = this.pending.shift();
      if (!waiter) {
        this.stderrTail += `\n[unexpected oracle output] ${line.slice(0, 200)}`;
        continue;
      }
      if (this.pending.length === 0) this.setRef(false);
      try {
        waiter.resolve(JSON.parse(line));
      } catch (err) {
        waiter.reject(new Error(`bad oracle response line: ${line.slice(0, 200)} (${String(err)})`));
      }
    }
  }

  private failAll(err: Error): void {
    const waiting = this.pending.splice(0);
    for (const w of waiting) w.reject(err);
  }

  private setRef(on: boolean): void {
    if (on) this.child.ref();
    else this.child.unref();
    for (const stream of [this.child.stdout, this.child.stderr, this.child.stdin]) {
      const sock = stream as unknown as Partial<Socket>;
      if (on) sock.ref?.();
      else sock.unref?.();
    }
  }
}
