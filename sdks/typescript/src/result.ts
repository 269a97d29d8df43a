import { constants } from "node:os";

import { ProtocolError, SandboxCancelledError, SetupFailedError } from "./errors.js";
import type { SessionState, StatusEvent } from "./status.js";

/** The snapshot session a run recorded (its `session` status event): {@link Result.session}. */
export interface Session {
  /** The full session id (32 hex digits). */
  readonly id: string;
  /** Its state when zerobox exited. */
  readonly state: SessionState;
  /** How many changes it recorded. */
  readonly changes: number;
}

/** The outcome of a sandboxed command that ran. */
export class Result {
  /** The command's exit code, or null when it was killed by a signal. */
  readonly exitCode: number | null;
  /** The number of the signal that killed the command, or null. */
  readonly signal: number | null;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  /** The snapshot session, for runs with a `snapshot` mode; else null. */
  readonly session: Session | null;
  /** @deprecated `session.id`, kept for older callers. */
  readonly sessionId: string | null;
  /** @deprecated `session.state`, kept for older callers. */
  readonly sessionState: SessionState | null;
  /** @deprecated `session.changes`, kept for older callers. */
  readonly sessionChanges: number | null;
  /** The command's pid as the host saw it. */
  readonly pid: number | null;
  /** Every --status-fd event, in order. */
  readonly events: readonly StatusEvent[];

  constructor(init: {
    exitCode: number | null;
    signal: number | null;
    stdout: Buffer;
    stderr: Buffer;
    session?: Session | null;
    sessionId?: string | null;
    sessionState?: SessionState | null;
    sessionChanges?: number | null;
    pid?: number | null;
    events?: readonly StatusEvent[];
  }) {
    this.exitCode = init.exitCode;
    this.signal = init.signal;
    this.stdout = init.stdout;
    this.stderr = init.stderr;
    // Either spelling given, both filled in.
    const flat =
      init.sessionId != null ? { id: init.sessionId, state: init.sessionState ?? ("" as SessionState), changes: init.sessionChanges ?? 0 } : null;
    this.session = init.session ?? flat;
    this.sessionId = this.session?.id ?? null;
    this.sessionState = this.session?.state ?? null;
    this.sessionChanges = this.session?.changes ?? null;
    this.pid = init.pid ?? null;
    this.events = init.events ?? [];
  }

  /** Whether the command exited with 0. */
  get ok(): boolean {
    return this.exitCode === 0;
  }

  /** The name of `signal` ("SIGTERM"), or null. */
  get signalName(): NodeJS.Signals | null {
    if (this.signal === null) return null;
    for (const [name, num] of Object.entries(constants.signals)) {
      if (num === this.signal) return name as NodeJS.Signals;
    }
    return null;
  }

  /** stdout decoded (UTF-8 unless told otherwise). */
  text(encoding: BufferEncoding = "utf8"): string {
    return this.stdout.toString(encoding);
  }

  /** stdout parsed as JSON. */
  json<T = unknown>(): T {
    return JSON.parse(this.stdout.toString("utf8")) as T;
  }
}

/** How zerobox itself ended, as Node reported it. */
export interface ZeroboxExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The first `zerobox: error:` line of stderr without its prefix, else its first line. */
function zeroboxMessage(stderr: Buffer): string | null {
  const lines = stderr.toString("utf8").split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const prefix = "zerobox: error: ";
  const error = lines.find((l) => l.startsWith(prefix));
  if (error !== undefined) return error.slice(prefix.length);
  return lines[0] ?? null;
}

/**
 * Tells the command's own outcome apart from zerobox's failures by the status events:
 * the command ran exactly when there is a `child_exit` event. A `setup_error` event, or
 * zerobox ending without `child_exit` (a usage error has no events at all), throws
 * SetupFailedError (SandboxCancelledError when `cancelled`: the caller killed zerobox);
 * a malformed `child_exit` or `session` event throws ProtocolError.
 */
export function resultFromEvents(
  events: readonly StatusEvent[],
  exit: ZeroboxExit,
  stdout: Buffer,
  stderr: Buffer,
  cancelled = false,
): Result {
  let childExit: { code: number | null; signal: number | null } | null = null;
  let pid: number | null = null;
  let session: Session | null = null;
  for (const ev of events) {
    switch (ev.event) {
      case "setup_error":
        throw new SetupFailedError(String(ev.message ?? "setup error"), { exitCode: exit.code, signal: exit.signal, stderr });
      case "child_started":
        pid = ev.pid;
        break;
      case "child_exit":
        childExit = { code: ev.code ?? null, signal: ev.signal ?? null };
        if (childExit.code === null && childExit.signal === null) {
          throw new ProtocolError(`child_exit event without code or signal: ${JSON.stringify(ev)}`, { exitCode: exit.code, signal: exit.signal, stderr });
        }
        break;
      case "session":
        if (typeof ev.id !== "string" || typeof ev.state !== "string" || typeof ev.changes !== "number") {
          throw new ProtocolError(`malformed session event: ${JSON.stringify(ev)}`, { exitCode: exit.code, signal: exit.signal, stderr });
        }
        session = { id: ev.id, state: ev.state, changes: ev.changes };
        break;
      default:
        break;
    }
  }
  if (childExit === null) {
    let message: string;
    if (exit.signal !== null) {
      message = `zerobox was killed by ${exit.signal} before the command finished`;
    } else {
      message = zeroboxMessage(stderr) ?? `zerobox exited with status ${exit.code} without running the command`;
    }
    if (cancelled) throw new SandboxCancelledError(`the sandbox was killed before the command finished (${message})`, { exitCode: exit.code, signal: exit.signal, stderr });
    throw new SetupFailedError(message, { exitCode: exit.code, signal: exit.signal, stderr });
  }
  return new Result({
    exitCode: childExit.code,
    signal: childExit.signal,
    stdout,
    stderr,
    session,
    pid,
    events,
  });
}
