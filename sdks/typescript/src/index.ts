/**
 * TypeScript SDK for zerobox, a Linux sandbox CLI.
 *
 * ```ts
 * import { Sandbox } from "zerobox";
 * const r = await new Sandbox({ allowWrite: ["/var/tmp/out"] }).run("sh", ["-c", "echo hi"]);
 * console.log(r.exitCode, r.text());
 * ```
 */
export { Sandbox, type RunOptions } from "./sandbox.js";
export { SandboxProcess, type SpawnOptions } from "./process.js";
export { Result, type Session } from "./result.js";
export {
  SandboxError,
  BinaryNotFoundError,
  SetupFailedError,
  SnapshotFailedError,
  SandboxTimeoutError,
  SandboxAbortError,
  SandboxCancelledError,
  ProtocolError,
  type ErrorKind,
  type SandboxErrorDetails,
} from "./errors.js";
export { findBinary } from "./binary.js";
export { escapeListItem, type List, type SandboxOptions, type SnapshotMode } from "./policy.js";
export type {
  StatusEvent,
  SetupErrorEvent,
  ChildStartedEvent,
  ChildExitEvent,
  NetEvent,
  SessionEvent,
  SessionState,
} from "./status.js";
export * as snapshots from "./snapshots.js";
export type { SnapshotOptions, ForceOptions, DiffOptions, SessionInfo, Change, ChangeKind, Diff } from "./snapshots.js";
