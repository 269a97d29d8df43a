//! Running commands: exit codes, signals, errors, output, policy, timeouts, kills.
//! Against the real zerobox binary; see tests/common.

mod common;

use std::io::{BufRead, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{processes_running, wait_for, TempDir};
use zerobox::{Error, Sandbox};

fn sh(sb: &Sandbox, script: &str) -> zerobox::Output {
    sb.run("sh", ["-c", script]).unwrap_or_else(|e| panic!("sh -c {script:?}: {e}"))
}

#[test]
fn exit_code_and_output() {
    let t = TempDir::new("exit");
    let out = sh(&t.sandbox(), "echo out; echo err >&2; exit 3");
    assert_eq!((out.exit_code, out.signal), (Some(3), None));
    assert!(!out.success());
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(out.text(), "out\n");
    assert!(out.stderr_text().contains("err\n"), "{:?}", out.stderr_text());
    assert!(out.session.is_none());
    assert!(out.pid.is_some());
    let kinds: Vec<_> = out.events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(kinds, ["child_started", "child_exit"]);
    assert!(sh(&t.sandbox(), "true").success());
}

#[test]
fn signal_is_not_an_exit_code() {
    let t = TempDir::new("signal");
    // zerobox exits 128+15 for both; the SDK keeps them apart, as the Python SDK does.
    let out = sh(&t.sandbox(), "kill -TERM $$");
    assert_eq!((out.exit_code, out.signal), (None, Some(15)));
    let out = sh(&t.sandbox(), "kill -KILL $$");
    assert_eq!((out.exit_code, out.signal), (None, Some(9)));
    let out = sh(&t.sandbox(), "exit 143");
    assert_eq!((out.exit_code, out.signal), (Some(143), None));
}

#[test]
fn setup_error_is_not_exit_code_125() {
    let t = TempDir::new("setup");
    match t.sandbox().allow_write(["/nonexistent/x/y"]).command("true").run() {
        Err(Error::Sandbox { message, exit_code, stderr }) => {
            assert!(message.contains("/nonexistent/x/y"), "{message}");
            assert_eq!(exit_code, Some(125));
            assert!(String::from_utf8_lossy(&stderr).contains("zerobox: error:"));
        }
        other => panic!("expected a setup error, got {other:?}"),
    }
    let missing_cwd = t.join("no-such-dir");
    assert!(matches!(t.sandbox().cwd(&missing_cwd).command("true").run(), Err(Error::Sandbox { .. })));

    let out = sh(&t.sandbox(), "exit 125");
    assert_eq!((out.exit_code, out.signal), (Some(125), None));
}

#[test]
fn usage_error_is_a_sandbox_error() {
    let t = TempDir::new("usage");
    match t.sandbox().resolve("h.test", "not-an-ip").command("true").run() {
        Err(Error::Sandbox { message, exit_code, .. }) => {
            assert_eq!(exit_code, Some(2));
            assert!(message.contains("not-an-ip"), "{message}");
            assert!(message.starts_with("zerobox did not run the command: "), "{message}");
        }
        other => panic!("expected a usage error, got {other:?}"),
    }
}

#[test]
fn not_found_and_not_executable() {
    let t = TempDir::new("127");
    let out = t.sandbox().command("no-such-command-zerobox-sdk").run().unwrap();
    assert_eq!(out.exit_code, Some(127));
    let out = t.sandbox().command("/etc/hostname").run().unwrap();
    assert_eq!(out.exit_code, Some(126));
}

#[test]
fn input_and_json() {
    let t = TempDir::new("json");
    let out = t.sandbox().command("cat").input(&br#"{"a": [1, 2], "s": "\u00e9"}"#[..]).run().unwrap();
    let v = out.json().unwrap();
    assert_eq!(v["a"][1].as_i64(), Some(2));
    assert_eq!(v["s"].as_str(), Some("é"));
    let out = sh(&t.sandbox(), "echo not json");
    assert!(matches!(out.json(), Err(Error::Json(_))));
}

#[test]
fn ten_megabytes_on_both_streams() {
    let t = TempDir::new("big");
    let n = 10 * 1024 * 1024;
    let script = format!("head -c {n} /dev/zero & head -c {n} /dev/zero >&2; wait");
    let out = t.sandbox().command("sh").args(["-c", &script]).timeout(Duration::from_secs(120)).run().unwrap();
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.stdout.len(), n);
    assert!(out.stderr.len() >= n, "{}", out.stderr.len());
    assert!(out.stderr[..n].iter().all(|&b| b == 0));
}

#[test]
fn env_values_and_lists() {
    let t = TempDir::new("env");
    let out = sh(&t.sandbox().env("ZB_SDK_VAR", "hello, world=1"), r#"printf %s "$ZB_SDK_VAR""#);
    assert_eq!(out.text(), "hello, world=1");

    // host_env sets zerobox's own environment; the sandbox sees only what is allowed.
    let host = t.sandbox().host_env("ZB_SDK_INHERIT", "yes").host_env("ZB_SDK_DENIED", "no");
    let script = r#"printf '%s %s' "${ZB_SDK_INHERIT-unset}" "${ZB_SDK_DENIED-unset}""#;
    assert_eq!(sh(&host, script).text(), "unset unset");
    assert_eq!(sh(&host.clone().allow_env(["ZB_SDK_INHERIT"]), script).text(), "yes unset");
    assert_eq!(sh(&host.clone().allow_env_all(), script).text(), "yes no");
    assert_eq!(sh(&host.clone().allow_env_all().deny_env(["ZB_SDK_DENIED"]), script).text(), "yes unset");
}

#[test]
fn read_policy() {
    let t = TempDir::new("read");
    let secret = t.join("secret.txt");
    std::fs::write(&secret, "top secret\n").unwrap();
    let cat = format!("cat {}", secret.display());
    assert_eq!(sh(&t.sandbox(), &cat).text(), "top secret\n");
    let out = sh(&t.sandbox().deny_read([&secret]), &cat);
    assert_ne!(out.exit_code, Some(0));
    assert!(out.stdout.is_empty());
    assert!(out.stderr_text().contains("Permission denied"), "{}", out.stderr_text());
    // allow_read limits user data: /var/tmp is not in the list, so the file is absent.
    let out = sh(&t.sandbox().allow_read(["/usr"]), &cat);
    assert_ne!(out.exit_code, Some(0));
    assert!(out.stdout.is_empty());
}

#[test]
fn deny_list_with_odd_names() {
    // Names zerobox's list rule treats specially (",", "\,", a trailing backslash), each
    // followed by another name, and a newline: every one must be denied.
    let t = TempDir::new("lists");
    let names =
        ["trail\\", "comma,name", "two\\\\", "new\nline", "\\", "esc\\,comma", "back\\slash", ",lead", "end,\\"];
    let paths: Vec<PathBuf> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let p = t.join(name);
            std::fs::write(&p, format!("zb-denied-{i}\n")).unwrap();
            p
        })
        .collect();
    let control = t.join("control");
    std::fs::write(&control, "zb-control\n").unwrap();
    let script = r#"for f do cat -- "$f" 2>/dev/null; done; cat -- "$0""#;
    let mut args: Vec<std::ffi::OsString> = vec!["-c".into(), script.into(), control.clone().into()];
    args.extend(paths.iter().map(|p| p.clone().into_os_string()));
    let open = t.sandbox().run("sh", &args).unwrap();
    for i in 0..names.len() {
        assert!(open.text().contains(&format!("zb-denied-{i}\n")), "readable without the list: {}", open.text());
    }
    let denied = t.sandbox().deny_read(&paths).run("sh", &args).unwrap();
    assert_eq!(denied.exit_code, Some(0), "{}", denied.stderr_text());
    assert!(denied.text().contains("zb-control\n"));
    for (i, name) in names.iter().enumerate() {
        assert!(!denied.text().contains(&format!("zb-denied-{i}")), "{name:?} was readable");
    }
}

#[test]
fn write_policy() {
    let t = TempDir::new("write");
    let target = t.join("out.txt");
    let script = format!("echo x > {}", target.display());
    // /var/tmp is scratch inside the sandbox: the write succeeds but is thrown away.
    assert_eq!(sh(&t.sandbox(), &script).exit_code, Some(0));
    assert!(!target.exists());
    let out = sh(&t.sandbox(), "echo x > /usr/zerobox-sdk-rust-test");
    assert_ne!(out.exit_code, Some(0));
    let out = sh(&t.sandbox().allow_write([&t.path]), &script);
    assert_eq!(out.exit_code, Some(0), "{}", out.stderr_text());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
    // deny_write keeps a path read-only inside a writable one.
    let ro = t.join("ro");
    std::fs::create_dir(&ro).unwrap();
    let out = sh(&t.sandbox().allow_write([&t.path]).deny_write([&ro]), &format!("echo y > {}/f", ro.display()));
    assert_ne!(out.exit_code, Some(0));
    assert!(!ro.join("f").exists());
}

#[test]
fn comma_in_a_path() {
    let t = TempDir::new("comma");
    let d = t.join("a,b");
    std::fs::create_dir(&d).unwrap();
    let out = t
        .sandbox()
        .allow_write([&d])
        .run("sh", ["-c".as_ref(), r#"echo y > "$1/f""#.as_ref(), "sh".as_ref(), d.as_os_str()])
        .unwrap();
    assert_eq!(out.exit_code, Some(0), "{}", out.stderr_text());
    assert!(d.join("f").exists());
}

#[test]
fn working_directory() {
    let t = TempDir::new("cwd");
    let out = t.sandbox().cwd("/usr").command("pwd").run().unwrap();
    assert_eq!(out.text(), "/usr\n");
}

#[test]
fn strict_runs_where_every_layer_is_available() {
    let t = TempDir::new("strict");
    let out = t.sandbox().strict(true).command("true").run().unwrap();
    assert_eq!(out.exit_code, Some(0), "{}", out.stderr_text());
}

#[test]
fn binary_not_found_names_the_path() {
    let err = Sandbox::new().binary("/nonexistent/zerobox").command("true").run().unwrap_err();
    assert!(matches!(err, Error::BinaryNotFound { .. }));
    assert_eq!(err.to_string(), "zerobox binary not found; tried: /nonexistent/zerobox (does not exist)");
}

/// A copy of `sleep` under a name unique to the test, so /proc shows which processes
/// are ours.
fn marker_sleep(t: &TempDir) -> PathBuf {
    let exe = t.join("zbsdk-sleep");
    std::fs::copy("/bin/sleep", &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    exe
}

/// Starts `sh -c 'SLEEP 100 & echo $! > PIDFILE; wait'` and returns the process with
/// the grandchild's host pid, checked through the pid file (the pid file holds the pid
/// inside the sandbox's pid namespace; /proc/PID/status maps it to the host's).
fn spawn_grandchild(t: &TempDir, timeout: Option<Duration>) -> (zerobox::Process, PathBuf, u32) {
    let exe = marker_sleep(t);
    let pidfile = t.join("grandchild.pid");
    let script = format!("{} 100 & echo $! > {}; wait", exe.display(), pidfile.display());
    let mut cmd = t.sandbox().allow_write([&t.path]).command("sh").args(["-c", &script]);
    if let Some(d) = timeout {
        cmd = cmd.timeout(d);
    }
    let p = cmd.spawn().unwrap();
    let ns_pid: u32 = wait_for("the pid file", Duration::from_secs(20), || {
        std::fs::read_to_string(&pidfile).ok()?.trim().parse().ok()
    });
    let host_pid = wait_for("the grandchild in /proc", Duration::from_secs(5), || {
        processes_running(&exe).into_iter().find(|&(_, ns)| ns == ns_pid).map(|(host, _)| host)
    });
    assert!(Path::new(&format!("/proc/{host_pid}")).exists());
    (p, exe, host_pid)
}

fn assert_gone(exe: &Path, host_pid: u32) {
    wait_for(&format!("grandchild {host_pid} to die"), Duration::from_secs(5), || {
        processes_running(exe).is_empty().then_some(())
    });
}

#[test]
fn timeout_kills_the_grandchild() {
    let t = TempDir::new("timeout");
    let start = Instant::now();
    let (p, exe, host_pid) = spawn_grandchild(&t, Some(Duration::from_secs(3)));
    match p.wait() {
        Err(Error::Timeout { timeout, .. }) => assert_eq!(timeout, Duration::from_secs(3)),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(start.elapsed() < Duration::from_secs(20), "{:?}", start.elapsed());
    assert_gone(&exe, host_pid);

    // The same through wait_timeout.
    let (p, exe, host_pid) = spawn_grandchild(&t, None);
    assert!(matches!(p.wait_timeout(Duration::from_millis(300)), Err(Error::Timeout { .. })));
    assert_gone(&exe, host_pid);
}

#[test]
fn timeout_keeps_partial_output() {
    let t = TempDir::new("partial");
    let err = t.sandbox().command("sh").args(["-c", "echo early; sleep 100"]).timeout(Duration::from_secs(2)).run();
    match err {
        Err(Error::Timeout { stdout, .. }) => assert_eq!(stdout, b"early\n"),
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[test]
fn kill_from_another_thread_kills_the_grandchild() {
    let t = TempDir::new("kill");
    let (p, exe, host_pid) = spawn_grandchild(&t, None);
    let killer = p.killer();
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        killer.kill().unwrap();
    });
    assert!(matches!(p.wait(), Err(Error::Killed { .. })));
    h.join().unwrap();
    assert_gone(&exe, host_pid);
}

#[test]
fn dropping_a_process_kills_the_sandbox() {
    let t = TempDir::new("drop");
    let (p, exe, host_pid) = spawn_grandchild(&t, None);
    drop(p);
    assert_gone(&exe, host_pid);
}

#[test]
fn streaming_reads_a_line_before_the_end() {
    let t = TempDir::new("stream");
    let flag = t.join("go");
    let script = format!("echo first; while [ ! -e {} ]; do sleep 0.05; done; echo second", flag.display());
    let mut p = t.sandbox().allow_write([&t.path]).spawn("sh", ["-c", &script]).unwrap();
    let mut line = String::new();
    p.stdout.as_mut().unwrap().read_line(&mut line).unwrap();
    assert_eq!(line, "first\n");
    assert!(p.try_wait().unwrap().is_none(), "still running: it waits for the flag");
    // child_started comes before the first line, but on another thread: allow it a moment.
    let pid = wait_for("child_started", Duration::from_secs(5), || p.command_pid());
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    std::fs::write(&flag, "").unwrap();
    let out = p.wait().unwrap();
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.stdout, b"second\n");
}

#[test]
fn stdin_pipe() {
    let t = TempDir::new("stdin");
    let mut p = t.sandbox().command("tr").args(["a-z", "A-Z"]).stdin_piped().spawn().unwrap();
    let mut stdin = p.stdin.take().unwrap();
    stdin.write_all(b"shout\n").unwrap();
    drop(stdin);
    let mut s = String::new();
    p.stdout.as_mut().unwrap().read_to_string(&mut s).unwrap();
    assert_eq!(s, "SHOUT\n");
    assert_eq!(p.wait().unwrap().exit_code, Some(0));
}

#[test]
fn concurrent_runs() {
    let t = TempDir::new("concurrent");
    let sb = t.sandbox();
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|i| {
                let sb = &sb;
                s.spawn(move || {
                    sb.command("sh")
                        .args(["-c", &format!("sleep 0.3; echo {i}; exit {i}")])
                        .timeout(Duration::from_secs(60))
                        .run()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, r) in results.into_iter().enumerate() {
        let out = r.unwrap_or_else(|e| panic!("run {i}: {e}"));
        assert_eq!(out.exit_code, Some(i as i32));
        assert_eq!(out.text(), format!("{i}\n"));
    }
}

/// A plain-HTTP server on 127.0.0.1 answering `ok` to every request.
fn http_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in l.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    port
}

#[test]
fn network_lists() {
    assert!(Path::new("/usr/bin/curl").exists(), "this test needs /usr/bin/curl");
    let t = TempDir::new("net");
    let port = http_server();
    let url = format!("http://127.0.0.1:{port}/");
    let script = format!("curl -s -w ' %{{http_code}}' {url}");
    // No network by default: not even the host's loopback.
    let out = sh(&t.sandbox(), &script);
    assert_ne!(out.exit_code, Some(0), "{}", out.text());
    let rule = format!("127.0.0.1:{port}");
    let out = sh(&t.sandbox().allow_net([&rule]), &script);
    assert_eq!(out.text(), "ok 200", "{}", out.stderr_text());
    let net: Vec<_> = out.events.iter().filter(|e| e["event"].as_str() == Some("net")).collect();
    assert_eq!(net.len(), 1, "{:?}", out.events);
    assert_eq!(net[0]["action"].as_str(), Some("allow"));
    assert_eq!(net[0]["port"].as_u64(), Some(u64::from(port)));
    let out = sh(&t.sandbox().allow_net_all().deny_net([&rule]), &script);
    assert!(out.text().ends_with(" 403"), "{}", out.text());
}
