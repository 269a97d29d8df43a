import { constants } from "node:os";

import { SandboxError } from "./errors.js";
import type { SessionState, StatusEvent } from "./status.js";

/** The outcome of a sandboxed command that ran. */
export class Result {
  /** The command's exit code, or null when it was killed by a signal. */
  readonly exitCode: number | null;
  /** The number of the signal that killed the command, or null. */
  readonly signal: number | null;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  /** The snapshot session (full id), for runs with a `snapshot` mode. */
  readonly sessionId: string | null;
  readonly sessionState: SessionState | null;
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
    this.sessionId = init.sessionId ?? null;
    this.sessionState = init.sessionState ?? null;
    this.sessionChanges = init.sessionChanges ?? null;
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
 * SandboxError.
 */
export function resultFromEvents(events: readonly StatusEvent[], exit: ZeroboxExit, stdout: Buffer, stderr: Buffer): Result {
  let childExit: { code: number | null; signal: number | null } | null = null;
  let pid: number | null = null;
  let session: { id: string; state: SessionState; changes: number } | null = null;
  for (const ev of events) {
    switch (ev.event) {
      case "setup_error":
        throw new SandboxError(String(ev.message ?? "setup error"), { exitCode: exit.code, signal: exit.signal, stderr });
      case "child_started":
        pid = ev.pid;
        break;
      case "child_exit":
        childExit = { code: ev.code ?? null, signal: ev.signal ?? null };
        break;
      case "session":
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
    throw new SandboxError(message, { exitCode: exit.code, signal: exit.signal, stderr });
  }
  return new Result({
    exitCode: childExit.code,
    signal: childExit.signal,
    stdout,
    stderr,
    sessionId: session?.id ?? null,
    sessionState: session?.state ?? null,
    sessionChanges: session?.changes ?? null,
    pid,
    events,
  });
}
