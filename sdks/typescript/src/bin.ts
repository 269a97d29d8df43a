#!/usr/bin/env node
/**
 * The `zerobox` command of the npm package: runs the binary {@link findBinary} finds
 * (the platform package's, once installed) with this process's arguments and stdio, and
 * exits as it exits. A signal that ends the launcher's wait (SIGINT, SIGTERM, SIGHUP) is
 * passed on to zerobox, which passes it to the command; when zerobox is killed by a
 * signal, the launcher dies of the same signal, so a shell sees what it would see
 * without the launcher.
 */
import { spawn } from "node:child_process";

import { findBinary } from "./binary.js";
import { SandboxError } from "./errors.js";

function main(): void {
  let binary: string;
  try {
    binary = findBinary();
  } catch (e) {
    process.stderr.write(`zerobox: ${e instanceof SandboxError ? e.message : String(e)}\n`);
    process.exit(127);
  }
  const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
  const forward = (signal: NodeJS.Signals): void => {
    child.kill(signal);
  };
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, forward);
  child.on("error", (e) => {
    process.stderr.write(`zerobox: ${binary}: ${e.message}\n`);
    process.exit(127);
  });
  child.on("exit", (code, signal) => {
    if (signal !== null) {
      for (const s of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.off(s, forward);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}

main();
