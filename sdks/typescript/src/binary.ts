import { accessSync, constants, statSync } from "node:fs";
import { delimiter, join, resolve } from "node:path";

import { BinaryNotFoundError } from "./errors.js";

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The zerobox executable, as an absolute path: `binary` if given, else
 * `$ZEROBOX_BIN`, else `zerobox` in a `PATH` directory.
 *
 * Throws {@link BinaryNotFoundError} (a SandboxError) naming every path it tried. An
 * explicit `binary` that is not an executable file is an error, never a reason to look
 * elsewhere.
 */
export function findBinary(binary?: string): string {
  if (binary !== undefined) {
    if (binary !== "" && isExecutableFile(binary)) return resolve(binary);
    throw new BinaryNotFoundError(`zerobox binary not found or not executable: ${binary}`);
  }
  const tried: string[] = [];
  const fromEnv = process.env["ZEROBOX_BIN"];
  if (fromEnv) {
    if (isExecutableFile(fromEnv)) return resolve(fromEnv);
    tried.push(`${fromEnv} (from $ZEROBOX_BIN)`);
  } else {
    tried.push("$ZEROBOX_BIN (unset)");
  }
  const dirs = (process.env["PATH"] ?? "").split(delimiter).filter((d) => d !== "");
  for (const dir of dirs) {
    const candidate = join(dir, "zerobox");
    if (isExecutableFile(candidate)) return resolve(candidate);
    tried.push(candidate);
  }
  if (dirs.length === 0) tried.push("PATH (empty)");
  throw new BinaryNotFoundError(`zerobox binary not found; tried: ${tried.join(", ")}`);
}

/** zerobox's own environment: the caller's, then `hostEnv` (`undefined` removes a
 *  variable), then `extra`. */
export function zeroboxEnv(
  hostEnv: Readonly<Record<string, string | undefined>> = {},
  extra: Readonly<Record<string, string>> = {},
): NodeJS.ProcessEnv {
  // fromEntries, not assignment: a variable called __proto__ stays a variable.
  const entries = [...Object.entries(process.env), ...Object.entries(hostEnv), ...Object.entries(extra)];
  const merged = new Map(entries);
  return Object.fromEntries([...merged].filter((e): e is [string, string] => e[1] !== undefined));
}
