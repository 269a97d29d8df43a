//! An agent's shell tool call, run in a zerobox sandbox and reviewed before it lands.
//!
//! A fake model (a hard-coded reply: no API key, no network) asks to run a shell
//! command. The command runs with no network and may write only to a work directory,
//! in review mode: its changes wait in a pending session until they are accepted.
//! ZEROBOX_HOME points at a temporary store, so the example leaves nothing behind.
//!
//! ```text
//! cd sdks/rust && ZEROBOX_BIN=path/to/zerobox cargo run --offline --example agent_tool_call
//! ```
//!
//! Exits 0 when every step behaved as described here, 1 otherwise (CTest runs it as
//! `sdk.rust.example`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zerobox::{DiffOptions, ForceOptions, Json, Sandbox, SessionState, SnapshotMode};

/// What the fake model answers to the user's request: a tool call, as JSON, as a model
/// API would return it. The command adds a file, edits one, and (being a model) also
/// tries the network and a write outside the project.
const MODEL_REPLY: &str = r#"{
  "role": "assistant",
  "tool_call": {
    "name": "shell",
    "arguments": {
      "command": "printf 'def greet(name):\\n    return f\"hello, {name}\"\\n' > greet.py\nsed -i 's/^status: draft$/status: greet() added/' README.md\necho \"wrote greet.py, updated README.md\"\ngetent hosts pypi.org >/dev/null 2>&1 && echo \"network: reachable\" || echo \"network: none\"\ntouch /etc/agent-was-here 2>/dev/null && echo \"outside write: allowed\" || echo \"outside write: refused\"\n"
    }
  }
}"#;

/// A directory under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let p = std::env::temp_dir().join(format!("zerobox-agent-example-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&p)?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Indents every line of `text` for display.
fn indent(text: &str) -> String {
    text.trim_end().lines().map(|l| format!("    {l}\n")).collect()
}

fn expect(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("UNEXPECTED: {what}"))
    }
}

fn run() -> Result<(), String> {
    let root = TempDir::new().map_err(|e| format!("temporary directory: {e}"))?;
    let work = root.0.join("project");
    let store = root.0.join("store");
    for d in [&work, &store] {
        std::fs::create_dir(d).map_err(|e| format!("mkdir {}: {e}", d.display()))?;
    }
    std::fs::write(work.join("README.md"), "# demo project\nstatus: draft\n").map_err(|e| e.to_string())?;

    println!("user: Add a greet(name) helper to the project.");
    let reply = Json::parse(MODEL_REPLY).map_err(|e| format!("model reply: {e}"))?;
    let call = &reply["tool_call"];
    expect(call["name"].as_str() == Some("shell"), "the model asked for another tool")?;
    let command = call["arguments"]["command"].as_str().ok_or("the tool call has no command")?;
    print!("model asks to run:\n{}", indent(command));

    let sandbox = Sandbox::new()
        .allow_write([&work]) // the only writable place; no allow_net: no network at all
        .cwd(&work)
        .snapshot(SnapshotMode::Review) // hold the changes until accepted
        .snapshot_paths([&work])
        .host_env("ZEROBOX_HOME", &store) // where zerobox keeps the session
        .quiet(true);
    let out = sandbox
        .command("sh")
        .args(["-c", command])
        .timeout(Duration::from_secs(60))
        .run()
        .map_err(|e| format!("zerobox failed: {e}"))?;
    let session = out.session.clone().ok_or("the run reported no session")?;
    let status = match (out.exit_code, out.signal) {
        (Some(code), _) => format!("exit {code}"),
        (None, signal) => format!("killed by signal {}", signal.unwrap_or(0)),
    };
    println!("\nsandbox: {status}, session {} ({} changes, {})", session.id, session.changes, session.state);
    print!("tool output:\n{}", indent(&out.text()));
    expect(out.exit_code == Some(0), &format!("tool exit code {:?}: {}", out.exit_code, out.stderr_text()))?;
    expect(out.text().contains("network: none"), "the sandbox had network")?;
    expect(out.text().contains("outside write: refused"), "a write outside the work dir succeeded")?;
    expect(session.state == SessionState::Pending, "the session is not pending")?;
    expect(!work.join("greet.py").exists(), "greet.py landed before review")?;

    let snaps = sandbox.snapshots();
    let diff = snaps.diff(&session.id, DiffOptions::default()).map_err(|e| e.to_string())?;
    println!("\nstructured diff (Snapshots::diff):");
    for c in &diff.changes {
        let rel = c.path.strip_prefix(&work).unwrap_or(&c.path);
        let ty = c.new_type.as_deref().or(c.old_type.as_deref()).unwrap_or("?");
        let sizes: Vec<String> = [c.old_size, c.new_size].iter().flatten().map(u64::to_string).collect();
        println!("    {:<9} {:<10} {ty}, {} bytes", c.kind.as_str(), rel.display(), sizes.join(" -> "));
    }
    print!("unified diff:\n{}", indent(&snaps.diff_text(&session.id).map_err(|e| e.to_string())?));
    let outside: Vec<&Path> = diff.changes.iter().map(|c| c.path.as_path()).filter(|p| !p.starts_with(&work)).collect();
    expect(outside.is_empty(), &format!("changes outside the work dir: {outside:?}"))?;
    let mut names: Vec<String> =
        diff.changes.iter().filter_map(|c| c.path.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
    names.sort();
    expect(names == ["README.md", "greet.py"], &format!("unexpected set of changes: {names:?}"))?;

    // The reviewer here is a rule (every change stays in the project); a real agent
    // would show the diff to a person.
    snaps.accept(&session.id, ForceOptions::default()).map_err(|e| e.to_string())?;
    let state = snaps.show(&session.id).map_err(|e| e.to_string())?.state;
    println!("\naccepted; session is now {state}");
    let landed = std::fs::read_to_string(work.join("greet.py")).map_err(|e| format!("greet.py: {e}"))?;
    print!("greet.py on the host:\n{}", indent(&landed));
    expect(landed.contains("def greet"), "greet.py did not land")?;
    let readme = std::fs::read_to_string(work.join("README.md")).map_err(|e| e.to_string())?;
    expect(readme.contains("status: greet() added"), "README.md was not updated")?;

    println!("\nmodel: Added greet() in greet.py. Tool output:\n{}", indent(&out.text()));
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
