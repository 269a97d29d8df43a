/** Extra details carried by a {@link SandboxError}. */
export interface SandboxErrorDetails {
  /** zerobox's exit status (125 setup error, 2 usage error, 1 a refused snapshot
   *  operation), or null when it did not exit normally or never started. */
  exitCode?: number | null;
  /** The signal that ended zerobox itself, when it was killed. */
  signal?: NodeJS.Signals | null;
  /** Everything zerobox wrote to stderr. */
  stderr?: Buffer;
  cause?: unknown;
}

/**
 * zerobox could not run the command: a setup error (exit 125), a usage error (exit 2),
 * zerobox killed before the command finished, a missing binary, or a failed
 * `zerobox snapshot` subcommand. The message is zerobox's own.
 *
 * A command that itself exits 125 is not an error: its result has `exitCode` 125.
 */
export class SandboxError extends Error {
  override name = "SandboxError";
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: Buffer;

  constructor(message: string, details: SandboxErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.exitCode = details.exitCode ?? null;
    this.signal = details.signal ?? null;
    this.stderr = details.stderr ?? Buffer.alloc(0);
  }
}

/** The command ran past its `timeout`; the whole sandbox was killed. */
export class SandboxTimeoutError extends Error {
  override name = "SandboxTimeoutError";
  readonly code = "ETIMEDOUT";
  /** The timeout, in milliseconds. */
  readonly timeout: number;
  /** Output collected before the kill. */
  readonly stdout: Buffer;
  readonly stderr: Buffer;

  constructor(timeout: number, stdout: Buffer, stderr: Buffer) {
    super(`command timed out after ${timeout} ms; the sandbox was killed`);
    this.timeout = timeout;
    this.stdout = stdout;
    this.stderr = stderr;
  }
}

/**
 * The `signal` passed to run() or spawn() was aborted; the whole sandbox was killed.
 * Its `name` is "AbortError" and its `code` "ABORT_ERR", as for Node's own
 * cancellable APIs, and `cause` is the signal's reason.
 */
export class SandboxAbortError extends Error {
  override name = "AbortError";
  readonly code = "ABORT_ERR";
  /** Output collected before the kill. */
  readonly stdout: Buffer;
  readonly stderr: Buffer;

  constructor(reason: unknown, stdout: Buffer = Buffer.alloc(0), stderr: Buffer = Buffer.alloc(0)) {
    super("the sandboxed command was aborted; the sandbox was killed", { cause: reason });
    this.stdout = stdout;
    this.stderr = stderr;
  }
}
