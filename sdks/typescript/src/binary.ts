import { accessSync, constants, statSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join, resolve } from "node:path";

import { BinaryNotFoundError } from "./errors.js";
import { moduleDir } from "./module-dir.js";

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The npm package that holds the zerobox binary for this machine, as the `zerobox`
 *  package's `optionalDependencies` name it (the binary is static: one package serves
 *  glibc and musl systems), or undefined where zerobox does not run. */
export function platformPackage(platform: string = process.platform, arch: string = process.arch): string | undefined {
  if (platform !== "linux" || (arch !== "x64" && arch !== "arm64")) return undefined;
  return `zerobox-linux-${arch}`;
}

/** The binary of the installed platform package, resolved as Node resolves the SDK's
 *  own dependencies; a string saying why not otherwise. */
function packagedBinary(): { path: string } | { why: string } {
  const pkg = platformPackage();
  if (pkg === undefined) return { why: `no zerobox package for ${process.platform}-${process.arch}` };
  let dir: string;
  try {
    dir = dirname(createRequire(join(moduleDir(), "binary.js")).resolve(`${pkg}/package.json`));
  } catch {
    return { why: `${pkg} (not installed)` };
  }
  const candidate = join(dir, "zerobox");
  return isExecutableFile(candidate) ? { path: candidate } : { why: `${candidate} (from ${pkg})` };
}

/**
 * The zerobox executable, as an absolute path: `binary` if given, else
 * `$ZEROBOX_BIN`, else the binary of the platform package `npm install zerobox`
 * installs (`zerobox-linux-x64` or `zerobox-linux-arm64`), else `zerobox` in a `PATH` directory.
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
  const packaged = packagedBinary();
  if ("path" in packaged) return packaged.path;
  tried.push(packaged.why);
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
