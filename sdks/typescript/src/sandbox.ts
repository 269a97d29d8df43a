import { findBinary, zeroboxEnv } from "./binary.js";
import { compilePolicy, type SandboxOptions } from "./policy.js";
import { SandboxProcess, STATUS_FD, type SpawnOptions } from "./process.js";
import type { Result } from "./result.js";

export interface RunOptions extends Omit<SpawnOptions, "stdin"> {
  /** Written to the command's stdin, which is then closed. Without it stdin is /dev/null. */
  input?: string | Uint8Array;
}

function checkCommand(cmd: string, args: readonly string[]): void {
  if (typeof cmd !== "string" || cmd === "") throw new TypeError("cmd must be a non-empty string");
  if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) {
    throw new TypeError("args must be an array of strings (a single string is not split)");
  }
}

/** run(cmd, opts) and spawn(cmd, opts) leave out the arguments. */
function split<O extends object>(args: readonly string[] | O | undefined, options: O | undefined): [readonly string[], O | undefined] {
  if (args !== undefined && !Array.isArray(args) && typeof args === "object") return [[], args as O];
  return [(args as readonly string[] | undefined) ?? [], options];
}

/**
 * A sandbox policy. Each run() or spawn() starts a fresh zerobox with it; a Sandbox can
 * be used for any number of commands, also at once.
 *
 * ```ts
 * const sb = new Sandbox({ allowWrite: ["/var/tmp/out"], env: { A: "1" } });
 * const r = await sb.run("sh", ["-c", "echo hi; exit 3"], { timeout: 30_000 });
 * r.exitCode; r.text();   // 3, "hi\n"
 * ```
 */
export class Sandbox {
  /** The policy as zerobox flags (no secret values: those travel in its environment). */
  readonly args: readonly string[];
  readonly #binary: string | undefined;
  readonly #hostEnv: Readonly<Record<string, string | undefined>>;
  readonly #secretEnv: Readonly<Record<string, string>>;

  constructor(options: SandboxOptions = {}) {
    const { args, secretEnv } = compilePolicy(options);
    this.args = Object.freeze(args);
    this.#binary = options.binary;
    this.#hostEnv = Object.freeze({ ...options.hostEnv });
    this.#secretEnv = Object.freeze(secretEnv);
  }

  /** The full zerobox command line for `cmd args…`, with `--status-fd=N` if given. */
  argv(cmd: string, args: readonly string[] = [], statusFd?: number): string[] {
    checkCommand(cmd, args);
    const out = [findBinary(this.#binary), ...this.args];
    if (statusFd !== undefined) out.push(`--status-fd=${statusFd}`);
    out.push("--", cmd, ...args);
    return out;
  }

  /**
   * Starts `cmd args…` and returns at once; read `stdout`/`stderr` while it runs and
   * call wait() for its Result. Throws SandboxError if zerobox cannot be found.
   */
  spawn(cmd: string, args?: readonly string[], options?: SpawnOptions): SandboxProcess;
  spawn(cmd: string, options?: SpawnOptions): SandboxProcess;
  spawn(cmd: string, argsOrOptions?: readonly string[] | SpawnOptions, maybeOptions?: SpawnOptions): SandboxProcess {
    const [args, options] = split(argsOrOptions, maybeOptions);
    return new SandboxProcess(this.argv(cmd, args, STATUS_FD), zeroboxEnv(this.#hostEnv, this.#secretEnv), options);
  }

  /**
   * Runs `cmd args…` to completion. Resolves with the command's Result, whatever its
   * exit code (even 125). Rejects with SandboxError when zerobox could not run it,
   * SandboxTimeoutError or SandboxAbortError after killing the sandbox.
   */
  run(cmd: string, args?: readonly string[], options?: RunOptions): Promise<Result>;
  run(cmd: string, options?: RunOptions): Promise<Result>;
  async run(cmd: string, argsOrOptions?: readonly string[] | RunOptions, maybeOptions?: RunOptions): Promise<Result> {
    const [args, options = {}] = split(argsOrOptions, maybeOptions);
    const { input, ...rest } = options;
    const proc = this.spawn(cmd, args, { ...rest, stdin: input === undefined ? "ignore" : "pipe" });
    if (input !== undefined && proc.stdin !== null) {
      // A command that exits without reading its input closes the pipe: not an error.
      proc.stdin.on("error", () => {});
      proc.stdin.end(input);
    }
    return proc.wait();
  }
}
