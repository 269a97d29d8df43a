// Shared by the tests, which run against the real zerobox ($ZEROBOX_BIN).
//
// Temporary directories live under /var/tmp, each test its own: inside the sandbox /tmp
// is scratch space, and a fresh directory keeps the tests independent.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

import { Sandbox, type SandboxOptions } from "zerobox";

export interface TempDir {
  dir: string;
  /** A fresh, empty snapshot store for ZEROBOX_HOME. */
  home: string;
  hostEnv: Record<string, string>;
  /** A Sandbox whose zerobox uses this directory's store. */
  sandbox(options?: SandboxOptions): Sandbox;
  cleanup(): void;
}

export async function tempDir(): Promise<TempDir> {
  const dir = mkdtempSync("/var/tmp/zerobox-ts-");
  const home = join(dir, "store");
  await mkdir(home);
  const hostEnv = { ZEROBOX_HOME: home };
  return {
    dir,
    home,
    hostEnv,
    sandbox: (options: SandboxOptions = {}) => new Sandbox({ hostEnv, ...options }),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Polls `probe` every 20 ms until it returns something other than undefined. */
export async function waitFor<T>(what: string, probe: () => T | undefined, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** A host process, identified by its pid and start time (so a reused pid is not it). */
export interface HostProcess {
  pid: number;
  startTime: string;
}

function startTime(pid: number): string | undefined {
  const stat = readOrUndefined(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  // Field 22; the fields after the command name, which ends at the last ')'.
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
}

/**
 * The host pid of a sandboxed process: the child of `parentHostPid` whose pid inside
 * the sandbox's pid namespace (the last NSpid entry) is `innerPid`. A pid a command
 * writes to a file is its pid inside the namespace, which the host cannot use directly.
 */
export function hostProcess(parentHostPid: number, innerPid: number): HostProcess | undefined {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const status = readOrUndefined(`/proc/${name}/status`);
    if (status === undefined) continue;
    const ppid = /^PPid:\s+(\d+)$/m.exec(status)?.[1];
    const nspid = /^NSpid:\s+(.*)$/m.exec(status)?.[1]?.trim().split(/\s+/);
    if (Number(ppid) !== parentHostPid || nspid === undefined) continue;
    if (Number(nspid[nspid.length - 1]) !== innerPid) continue;
    const pid = Number(name);
    const start = startTime(pid);
    if (start !== undefined) return { pid, startTime: start };
  }
  return undefined;
}

export function isAlive(p: HostProcess): boolean {
  const status = readOrUndefined(`/proc/${p.pid}/status`);
  if (status === undefined || startTime(p.pid) !== p.startTime) return false;
  return !/^State:\s+Z/m.test(status); // a zombie has already died
}

/** Kills the process if it still runs: when a kill test fails, its sandbox would
 *  otherwise keep the test process alive for as long as the grandchild sleeps. */
export function killIfAlive(p: HostProcess): void {
  if (isAlive(p)) process.kill(p.pid, "SIGKILL");
}

/** Waits up to 5 s for the process to be gone. */
export async function assertGone(p: HostProcess): Promise<void> {
  await waitFor(`pid ${p.pid} to die`, () => (isAlive(p) ? undefined : true), 5000);
}

/** The grandchild's pid file, as the host reads it (the pid inside the sandbox). */
export function readPid(path: string): number | undefined {
  const text = readOrUndefined(path)?.trim();
  return text ? Number(text) : undefined;
}

/** A shell script that starts a grandchild `sleep`, writes its pid to `pidFile`, and waits. */
export function grandchildScript(pidFile: string): string {
  return `sleep 1000 & echo $! > '${pidFile}'; wait`;
}
