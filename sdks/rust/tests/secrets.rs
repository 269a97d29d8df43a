//! Secrets: the real value reaches only the approved host, the sandbox sees a
//! placeholder, and the value is in no argv.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use common::TempDir;

const REAL_VALUE: &str = "zb-sdk-rust-real-token-7d41";

/// One plain-HTTP request on 127.0.0.1: sends back its header lines, answers `ok`.
fn one_request_server() -> (u16, mpsc::Receiver<Vec<String>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        if let Ok((mut conn, _)) = l.accept() {
            let mut headers = Vec::new();
            let mut r = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            while r.read_line(&mut line).unwrap_or(0) > 0 && line.trim_end() != "" {
                headers.push(line.trim_end().to_string());
                line.clear();
            }
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
            let _ = tx.send(headers);
        }
    });
    (port, rx)
}

#[test]
fn secret_reaches_only_the_approved_host() {
    let t = TempDir::new("secret");
    let (port, headers) = one_request_server();
    let host = format!("api.test:{port}");
    let script = format!(r#"curl -s -H "Authorization: Bearer $TOKEN" http://{host}/; echo; printf '%s' "$TOKEN""#);
    let sb = t.sandbox().secret("TOKEN", REAL_VALUE).secret_hosts("TOKEN", [&host]).resolve("api.test", "127.0.0.1");

    let argv = sb.command("sh").args(["-c", &script]).argv().unwrap();
    assert!(argv.iter().all(|a| !a.to_string_lossy().contains(REAL_VALUE)), "secret in argv: {argv:?}");

    let out = match sb.command("sh").args(["-c", &script]).timeout(Duration::from_secs(60)).run() {
        Ok(out) => out,
        Err(e) => panic!("run failed: {e}"),
    };
    assert_eq!(out.exit_code, Some(0), "{}", out.stderr_text());
    let text = out.text();
    let (body, seen) = text.split_once('\n').unwrap_or(("", &text));
    assert_eq!(body, "ok", "{text:?} / {}", out.stderr_text());
    assert!(seen.starts_with("ZEROBOX_SECRET_"), "the sandbox saw {seen:?}");
    assert!(!text.contains(REAL_VALUE), "the real value leaked into the sandbox: {text:?}");
    let got = headers.recv_timeout(Duration::from_secs(10)).expect("the server got no request");
    let auth = got.iter().find(|h| h.to_ascii_lowercase().starts_with("authorization:"));
    assert_eq!(auth.map(String::as_str), Some(format!("Authorization: Bearer {REAL_VALUE}").as_str()), "{got:?}");
}
