// The --status-fd protocol, version 1 (docs/usage.md): one JSON object per line.

/** The states a snapshot session can be in. */
export type SessionState = "running" | "pending" | "accepted" | "discarded" | "restored" | "failed";

/** zerobox failed before the command started. */
export interface SetupErrorEvent {
  v: number;
  event: "setup_error";
  message: string;
}

/** The command started; `pid` is its pid as the host sees it. */
export interface ChildStartedEvent {
  v: number;
  event: "child_started";
  pid: number;
}

/** The command ended with `code`, or was killed by `signal`. */
export interface ChildExitEvent {
  v: number;
  event: "child_exit";
  code?: number;
  signal?: number;
}

/** A decision of the network proxy (filtered network only). */
export interface NetEvent {
  v: number;
  event: "net";
  host: string;
  port: number;
  action: "allow" | "deny";
  reason: string;
}

/** The snapshot session of this run, after `child_exit`. */
export interface SessionEvent {
  v: number;
  event: "session";
  id: string;
  state: SessionState;
  changes: number;
}

export type StatusEvent = SetupErrorEvent | ChildStartedEvent | ChildExitEvent | NetEvent | SessionEvent;

/**
 * Splits the status stream into events. Lines that are not JSON objects with an
 * `event` field are skipped: a newer zerobox may add events, and a stray line must
 * not turn a finished run into an error.
 */
export class StatusParser {
  #pending: Buffer = Buffer.alloc(0);
  readonly #onEvent: (event: StatusEvent) => void;

  constructor(onEvent: (event: StatusEvent) => void) {
    this.#onEvent = onEvent;
  }

  push(chunk: Buffer): void {
    let data = this.#pending.length > 0 ? Buffer.concat([this.#pending, chunk]) : chunk;
    let nl: number;
    while ((nl = data.indexOf(0x0a)) !== -1) {
      this.#line(data.subarray(0, nl));
      data = data.subarray(nl + 1);
    }
    this.#pending = Buffer.from(data);
  }

  end(): void {
    if (this.#pending.length > 0) this.#line(this.#pending);
    this.#pending = Buffer.alloc(0);
  }

  #line(line: Buffer): void {
    const text = line.toString("utf8").trim();
    if (text === "") return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof value === "object" && value !== null && typeof (value as { event?: unknown }).event === "string") {
      this.#onEvent(value as StatusEvent);
    }
  }
}
