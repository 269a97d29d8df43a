//! zerobox-sdk-bench RUNS WARMUP - times `true` through the zerobox CLI and through the
//! Rust SDK inside this one process, interleaved and rotated like bench/sdk/py_bench.py:
//!   rust-cli  std::process::Command ZEROBOX_BIN -- true, stdio to /dev/null
//!   rust-sdk  zerobox::Sandbox::new().run("true", [])
//! Prints one `row<TAB>wall ms<TAB>-` line per timed call (std has no per-process CPU
//! clock, and this driver has no dependencies, so no CPU column).
use std::process::{Command, Stdio};
use std::time::Instant;

fn cli(zb: &str) {
    let status = Command::new(zb)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("rust-cli: spawn zerobox");
    assert!(status.success(), "rust-cli: zerobox -- true: {status}");
}

fn sdk(sb: &zerobox::Sandbox) {
    let out = sb.run("true", [""; 0]).expect("rust-sdk: run");
    assert_eq!(out.exit_code, Some(0), "rust-sdk: {:?}", String::from_utf8_lossy(&out.stderr));
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("RUNS WARMUP")).collect();
    let (runs, warmup) = (args[0], args[1]);
    let zb = std::env::var("ZEROBOX_BIN").expect("ZEROBOX_BIN");
    let sb = zerobox::Sandbox::new();
    let names = ["rust-cli", "rust-sdk"];
    let mut out = Vec::new();
    for i in 0..warmup + runs {
        for k in 0..names.len() {
            let name = names[(i + k) % names.len()];
            let t0 = Instant::now();
            if name == "rust-cli" { cli(&zb) } else { sdk(&sb) }
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            if i >= warmup {
                out.push(format!("{name}\t{ms:.4}\t-"));
            }
        }
    }
    println!("{}", out.join("\n"));
}
