import { spawn, type ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";

import { SandboxAbortError, SandboxTimeoutError, SetupFailedError } from "./errors.js";
import { Result, resultFromEvents, type ZeroboxExit } from "./result.js";
import { StatusParser, type StatusEvent } from "./status.js";

/** zerobox's fd for --status-fd: the first stdio slot after stdin, stdout and stderr. */
export const STATUS_FD = 3;

/** How long to wait for the pipes to close after killing the sandbox before giving up on
 *  them. zerobox takes the sandbox down with it, so this is only a safety net. */
const CLOSE_GRACE_MS = 5000;

export interface SpawnOptions {
  /** The command's stdin: "ignore" (/dev/null, the default), "pipe" or "inherit". */
  stdin?: "ignore" | "pipe" | "inherit";
  /** Kill the whole sandbox after this many milliseconds (0: never, as in
   *  child_process); wait() then rejects with SandboxTimeoutError. */
  timeout?: number;
  /** Kill the whole sandbox when this signal aborts; wait() then rejects with
   *  SandboxAbortError. */
  signal?: AbortSignal;
  /** Called with each --status-fd event as it arrives. */
  onEvent?: (event: StatusEvent) => void;
}

type Kill = { kind: "timeout"; ms: number } | { kind: "abort"; reason: unknown };

// When the program ends through process.exit() (or runs out of work) while sandboxes
// still run, kill them rather than leave them behind. A program killed by a signal cannot
// run this: it should abort its sandboxes in its own signal handler (a Ctrl-C in the
// terminal reaches zerobox too, which forwards it to the command).
const live = new Set<SandboxProcess>();
let exitHook = false;
function killLive(): void {
  for (const p of live) p.kill("SIGKILL");
}

type Closed = ZeroboxExit & { spawnError: Error | null };

/** Reads a stream to its end, unless someone else is already reading it. */
function drain(stream: Readable): () => Buffer {
  const chunks: Buffer[] = [];
  const reading = stream.listenerCount("data") > 0 || stream.listenerCount("readable") > 0;
  if (!reading && !stream.readableEnded && !stream.destroyed) {
    stream.on("data", (chunk: Buffer | string) => {
      chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
    });
  }
  return () => Buffer.concat(chunks);
}

/**
 * A running sandboxed command, from {@link Sandbox.spawn}. kill(), a timeout and an
 * abort kill zerobox, and zerobox's death takes the whole sandbox down (everything the
 * command started lives in the sandbox's pid namespace).
 */
export class SandboxProcess {
  /** The command's stdin when spawned with `stdin: "pipe"`. */
  readonly stdin: Writable | null;
  /** The command's output, readable while it runs. Output left unread is collected by wait(). */
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** The --status-fd events received so far. */
  readonly events: StatusEvent[] = [];

  readonly #child: ChildProcess;
  readonly #closed: Promise<Closed>;
  #exited = false;
  #kill: Kill | null = null;
  /** kill() sent SIGKILL: a cancellation. */
  #cancelled = false;
  #result: Promise<Result> | null = null;

  /** @internal Use Sandbox.spawn(). */
  constructor(argv: readonly string[], env: NodeJS.ProcessEnv, options: SpawnOptions = {}) {
    const [file, ...args] = argv;
    if (file === undefined) throw new TypeError("empty argv");
    const { timeout, signal, onEvent } = options;
    if (timeout !== undefined && !(Number.isFinite(timeout) && timeout >= 0)) {
      throw new RangeError(`timeout must be a number of milliseconds >= 0, not ${timeout}`);
    }
    if (signal?.aborted) throw new SandboxAbortError(signal.reason);

    // Not detached: killing zerobox alone is enough (its sandbox dies with it: the init
    // inside has PR_SET_PDEATHSIG, and the whole pid namespace goes with the init). A new
    // session (Node's `detached` is setsid) would also be a new scheduler autogroup, which
    // cost the Python SDK 5-10 ms a run on a loaded machine (docs/performance.md).
    this.#child = spawn(file, args, {
      stdio: [options.stdin ?? "ignore", "pipe", "pipe", "pipe"],
      env,
    });
    const child = this.#child;
    if (child.pid !== undefined) {
      live.add(this);
      if (!exitHook) {
        process.on("exit", killLive);
        exitHook = true;
      }
    }
    this.stdin = child.stdin;
    this.stdout = child.stdout as Readable;
    this.stderr = child.stderr as Readable;

    const parser = new StatusParser((event) => {
      this.events.push(event);
      onEvent?.(event);
    });
    const status = child.stdio[STATUS_FD] as Readable;
    status.on("data", (chunk: Buffer) => parser.push(chunk));
    status.on("end", () => parser.end());
    // The status pipe is ours, not the caller's: a read error must not crash the program.
    // Events lost with it show up as a missing child_exit, which wait() reports.
    status.on("error", () => {});

    let timer: NodeJS.Timeout | undefined;
    if (timeout !== undefined && timeout > 0) {
      timer = setTimeout(() => this.#killFor({ kind: "timeout", ms: timeout }), timeout);
    }
    const onAbort = (): void => this.#killFor({ kind: "abort", reason: signal?.reason });
    signal?.addEventListener("abort", onAbort, { once: true });

    this.#closed = new Promise<Closed>((resolve) => {
      const done = (closed: Closed): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        resolve(closed);
      };
      child.on("exit", () => {
        this.#exited = true;
        live.delete(this);
      });
      child.on("error", (error) => {
        // Only a failed spawn ends the process here; a failed kill() is not fatal.
        if (child.pid === undefined) {
          this.#exited = true;
          done({ code: null, signal: null, spawnError: error });
        }
      });
      child.on("close", (code, sig) => done({ code, signal: sig, spawnError: null }));
    });
  }

  /** zerobox's pid (not the command's: see `commandPid`). */
  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** The command's pid as the host sees it, once it has started. */
  get commandPid(): number | null {
    for (const ev of this.events) if (ev.event === "child_started") return ev.pid;
    return null;
  }

  /** Whether zerobox is still running. */
  get running(): boolean {
    return !this.#exited;
  }

  /**
   * Sends `signal` (SIGKILL unless told otherwise) to zerobox. SIGKILL kills zerobox,
   * which takes the whole sandbox down; other signals that zerobox forwards (SIGTERM,
   * SIGINT, …) reach the command. Returns false when zerobox has already exited.
   */
  kill(signal: NodeJS.Signals | number = "SIGKILL"): boolean {
    const pid = this.#child.pid;
    if (pid === undefined || this.#exited) return false;
    try {
      process.kill(pid, signal);
      if (signal === "SIGKILL" || signal === 9) this.#cancelled = true;
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ESRCH") return false;
      throw e;
    }
  }

  /**
   * Resolves when zerobox has exited and its output is closed. Output nobody else is
   * reading is collected into the Result. Rejects with SetupFailedError (a SandboxError)
   * when zerobox did not run the command (a setup or usage error), SandboxCancelledError
   * (a SandboxError) when kill() killed it first, SandboxTimeoutError after a timeout and
   * SandboxAbortError after an abort.
   */
  wait(): Promise<Result> {
    this.#result ??= this.#finish();
    return this.#result;
  }

  async #finish(): Promise<Result> {
    const out = drain(this.stdout);
    const err = drain(this.stderr);
    const closed = await this.#closed;
    const stdout = out();
    const stderr = err();
    if (closed.spawnError !== null) {
      throw new SetupFailedError(`cannot start zerobox: ${closed.spawnError.message}`, { stderr, cause: closed.spawnError });
    }
    if (this.#kill?.kind === "timeout") throw new SandboxTimeoutError(this.#kill.ms, stdout, stderr);
    if (this.#kill?.kind === "abort") throw new SandboxAbortError(this.#kill.reason, stdout, stderr);
    return resultFromEvents(this.events, closed, stdout, stderr, this.#cancelled);
  }

  #killFor(reason: Kill): void {
    if (this.#exited || this.#kill !== null) return;
    this.#kill = reason;
    this.kill("SIGKILL");
    // If something outside the sandbox still holds our pipes, stop waiting for them.
    setTimeout(() => {
      for (const stream of this.#child.stdio) stream?.destroy();
    }, CLOSE_GRACE_MS).unref();
  }
}
