// bench/sdk/ts_bench.mjs INDEX_JS RUNS WARMUP - times `true` through the zerobox CLI
// and through the TypeScript SDK (its built dist/esm/index.js), inside this one node
// process, interleaved and rotated like bench/sdk/py_bench.py:
//   typescript-cli  child_process.spawn(ZEROBOX_BIN, ["--", "true"]), stdio ignored
//   typescript-sdk  await new Sandbox().run("true", [])
// Prints one `row<TAB>wall ms<TAB>cpu ms` line per timed call, cpu being this process's
// own CPU time (process.cpuUsage: all its threads; not zerobox's).
import { spawn } from "node:child_process";
import { pathToFileURL } from "node:url";

const [indexJs, runsArg, warmupArg] = process.argv.slice(2);
const { Sandbox } = await import(pathToFileURL(indexJs).href);
const zb = process.env.ZEROBOX_BIN;
const runs = Number(runsArg), warmup = Number(warmupArg);
const sb = new Sandbox();

function cli() {
  return new Promise((resolve, reject) => {
    const p = spawn(zb, ["--", "true"], { stdio: "ignore" });
    p.on("error", reject);
    p.on("exit", (code) => code === 0 ? resolve() : reject(new Error(`typescript-cli: exit ${code}`)));
  });
}

async function sdk() {
  const r = await sb.run("true", []);
  if (r.exitCode !== 0) throw new Error(`typescript-sdk: exit ${r.exitCode}`);
}

const rows = [["typescript-cli", cli], ["typescript-sdk", sdk]];
const out = [];
for (let i = 0; i < warmup + runs; i++) {
  const order = rows.slice(i % rows.length).concat(rows.slice(0, i % rows.length));
  for (const [name, fn] of order) {
    const c0 = process.cpuUsage(), t0 = process.hrtime.bigint();
    await fn();
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    const c = process.cpuUsage(c0), cpu = (c.user + c.system) / 1e3;
    if (i >= warmup) out.push(`${name}\t${ms.toFixed(4)}\t${cpu.toFixed(4)}`);
  }
}
console.log(out.join("\n"));
