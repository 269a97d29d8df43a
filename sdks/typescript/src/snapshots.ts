// `zerobox snapshot` subcommands. The JSON they return is zerobox's own (`--json`
// output, documented in docs/usage.md), passed through unchanged, snake_case keys
// included, so it reads the same as the CLI's and keeps fields newer zerobox versions
// add. One exception: nanosecond times (`*_ns`) are bigints, as in Node's
// `fs.statSync(p, { bigint: true }).mtimeNs`, because today's times in nanoseconds
// exceed Number.MAX_SAFE_INTEGER and JSON.parse would round them.
import { spawn } from "node:child_process";

import { findBinary, zeroboxEnv } from "./binary.js";
import { ProtocolError, SetupFailedError, SnapshotFailedError } from "./errors.js";
import type { SessionState } from "./status.js";

export interface SnapshotOptions {
  /** Variables added to zerobox's environment, such as `ZEROBOX_HOME`; `undefined` removes one. */
  hostEnv?: Readonly<Record<string, string | undefined>>;
  /** The zerobox executable; else `$ZEROBOX_BIN`, else `zerobox` on `PATH`. */
  binary?: string;
}

export interface ForceOptions extends SnapshotOptions {
  /** Apply even where a target changed since the session recorded it. */
  force?: boolean;
}

export interface DiffOptions extends SnapshotOptions {
  /** Only changes at or below these paths. */
  paths?: readonly string[];
}

export type ChangeKind = "added" | "modified" | "deleted" | "type_changed" | "mode_changed";

/** A session, as `zerobox snapshot list --json` and `show --json` give it. */
export interface SessionInfo {
  id: string;
  state: SessionState;
  mode: string;
  kind: string;
  parent: string | null;
  changes: number;
  changes_by_kind: Record<ChangeKind, number>;
  command: string[];
  cwd: string;
  tracked: string[];
  exclude: string[];
  exit_code: number | null;
  signal: number | null;
  created_at: string | null;
  finished_at: string | null;
  applied_at: string | null;
  [field: string]: unknown;
}

/** One change of `zerobox snapshot diff --json`. `path` is absolute; `path_b64` replaces it
 *  for a name that is not UTF-8. `null` where a side has no value. */
export interface Change {
  path?: string;
  path_b64?: string;
  kind: ChangeKind;
  old_type: string | null;
  new_type: string | null;
  old_mode: number | null;
  new_mode: number | null;
  old_size: number | null;
  new_size: number | null;
  old_link?: string | null;
  new_link?: string | null;
  old_mtime_ns?: bigint | null;
  new_mtime_ns?: bigint | null;
  [field: string]: unknown;
}

export interface Diff {
  session: string;
  changes: Change[];
}

function checkId(id: string): void {
  // An id that looks like an option would be read as one (`accept --force`).
  if (typeof id !== "string" || id === "" || id.startsWith("-")) {
    throw new TypeError(`invalid session id ${JSON.stringify(id)}`);
  }
}

/** Runs `zerobox snapshot ARGS…`; its stdout, or SnapshotFailedError with its stderr. */
function snapshot(args: readonly string[], options: SnapshotOptions = {}): Promise<Buffer> {
  const binary = findBinary(options.binary);
  const env = zeroboxEnv(options.hostEnv);
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ["snapshot", ...args], { stdio: ["ignore", "pipe", "pipe"], env });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => err.push(c));
    child.on("error", (e) => reject(new SetupFailedError(`cannot start zerobox: ${e.message}`, { cause: e })));
    child.on("close", (code, signal) => {
      const stderr = Buffer.concat(err);
      if (code === 0) {
        resolve(Buffer.concat(out));
        return;
      }
      const text = stderr.toString("utf8").trim();
      const fallback = signal !== null ? `killed by ${signal}` : `exited with status ${code}`;
      reject(new SnapshotFailedError(text || `zerobox snapshot ${args[0]} ${fallback}`, { exitCode: code, signal, stderr }));
    });
  });
}

// A key ending in _ns with an integer value. Inside a JSON string every quote is
// escaped, so this cannot match the text of a value (a path, a command).
const NS_FIELD = /"(\w+_ns)"(\s*):(\s*)(-?\d+)/g;

function parse<T>(data: Buffer, what: string): T {
  const text = data.toString("utf8").replace(NS_FIELD, '"$1"$2:$3"$4"');
  try {
    return JSON.parse(text, (key, value: unknown) =>
      key.endsWith("_ns") && typeof value === "string" && /^-?\d+$/.test(value) ? BigInt(value) : value) as T;
  } catch (e) {
    throw new ProtocolError(`zerobox snapshot ${what} --json printed something that is not JSON`, { cause: e });
  }
}

/** All sessions, oldest first. */
export async function list(options?: SnapshotOptions): Promise<SessionInfo[]> {
  const data = await snapshot(["list", "--json"], options);
  if (data.toString("utf8").trim() === "") return [];
  return parse<SessionInfo[]>(data, "list");
}

/** One session (`ID` may be a unique prefix or `last`). */
export async function show(id: string, options?: SnapshotOptions): Promise<SessionInfo> {
  checkId(id);
  return parse<SessionInfo>(await snapshot(["show", id, "--json"], options), "show");
}

/** The structured diff (`diff --json`). */
export async function diff(id: string, options: DiffOptions = {}): Promise<Diff> {
  checkId(id);
  const paths = options.paths ?? [];
  const args = ["diff", id, "--json", ...(paths.length > 0 ? ["--", ...paths] : [])];
  return parse<Diff>(await snapshot(args, options), "diff");
}

/** The git-style unified diff, uncoloured. */
export async function diffText(id: string, options: DiffOptions = {}): Promise<string> {
  checkId(id);
  const paths = options.paths ?? [];
  const args = ["diff", id, "--color=never", ...(paths.length > 0 ? ["--", ...paths] : [])];
  return (await snapshot(args, options)).toString("utf8");
}

/** Applies a pending session. Refuses (SandboxError listing the conflicts) when a target
 *  changed since the session recorded it, unless `force`. */
export async function accept(id: string, options: ForceOptions = {}): Promise<void> {
  checkId(id);
  await snapshot(["accept", id, ...(options.force ? ["--force"] : [])], options);
}

/** Drops a pending session; its diff stays readable. */
export async function discard(id: string, options?: SnapshotOptions): Promise<void> {
  checkId(id);
  await snapshot(["discard", id], options);
}

/** Puts the files back to the session's baseline (itself recorded as a new session). */
export async function restore(id: string, options: ForceOptions = {}): Promise<void> {
  checkId(id);
  await snapshot(["restore", id, ...(options.force ? ["--force"] : [])], options);
}

/** Removes sessions older than `olderThanDays` days (never running or pending ones). */
export async function clean(olderThanDays: number, options?: SnapshotOptions): Promise<void> {
  if (!Number.isInteger(olderThanDays) || olderThanDays < 0) {
    throw new RangeError(`olderThanDays must be an integer >= 0, not ${olderThanDays}`);
  }
  await snapshot(["clean", `--older-than=${olderThanDays}`], options);
}
