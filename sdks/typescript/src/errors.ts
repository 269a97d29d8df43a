/**
 * What went wrong, in the names the Python and Rust SDKs use too (docs/sdk.md):
 * - `binary_not_found`: no usable zerobox executable ({@link BinaryNotFoundError})
 * - `setup_failed`: zerobox did not run the command ({@link SetupFailedError})
 * - `snapshot_failed`: a `zerobox snapshot` subcommand refused or failed ({@link SnapshotFailedError})
 * - `timeout`: the run's timeout expired ({@link SandboxTimeoutError})
 * - `cancelled`: the run was aborted or killed ({@link SandboxAbortError}, {@link SandboxCancelledError})
 * - `protocol`: zerobox's machine-readable output had an unexpected shape ({@link ProtocolError})
 */
export type ErrorKind = "binary_not_found" | "setup_failed" | "snapshot_failed" | "timeout" | "cancelled" | "protocol";

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
 *
 * The subclasses below say which failure it was (`kind`); their `name` stays
 * "SandboxError", as it was before they existed.
 */
export class SandboxError extends Error {
  override name = "SandboxError";
  /** Which failure this is; a SandboxError thrown as such is `setup_failed`. */
  readonly kind: ErrorKind = "setup_failed";
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

/** No usable zerobox executable; the message names every path tried. */
export class BinaryNotFoundError extends SandboxError {
  override readonly kind: ErrorKind = "binary_not_found";
}

/** zerobox did not run the command: a `setup_error` event (exit 125), a usage error
 *  (exit 2), zerobox ending without the command having exited, or zerobox failing to start. */
export class SetupFailedError extends SandboxError {
  override readonly kind: ErrorKind = "setup_failed";
}

/** A `zerobox snapshot` subcommand refused or failed (exit 1 or 2). */
export class SnapshotFailedError extends SandboxError {
  override readonly kind: ErrorKind = "snapshot_failed";
}

/** zerobox was killed with {@link SandboxProcess.kill} (SIGKILL) before the command exited. */
export class SandboxCancelledError extends SandboxError {
  override readonly kind: ErrorKind = "cancelled";
}

/** zerobox's machine-readable output (status events, `--json`) had an unexpected shape. */
export class ProtocolError extends SandboxError {
  override readonly kind: ErrorKind = "protocol";
}

/** The command ran past its `timeout`; the whole sandbox was killed. */
export class SandboxTimeoutError extends Error {
  override name = "SandboxTimeoutError";
  readonly kind: ErrorKind = "timeout";
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
  readonly kind: ErrorKind = "cancelled";
  /** Output collected before the kill. */
  readonly stdout: Buffer;
  readonly stderr: Buffer;

  constructor(reason: unknown, stdout: Buffer = Buffer.alloc(0), stderr: Buffer = Buffer.alloc(0)) {
    super("the sandboxed command was aborted; the sandbox was killed", { cause: reason });
    this.stdout = stdout;
    this.stderr = stderr;
  }
}
