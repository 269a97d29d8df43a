//! The golden `--status-fd` streams of tests/fixtures/status-fd, replayed by a stand-in
//! for zerobox (`replay.sh` there) and decoded by `run`, against the values of
//! `expected.json` there (the C++, Python and TypeScript tests check the same streams
//! against the same values). No zerobox needed.

use std::path::PathBuf;

use zerobox::{Error, ErrorKind, Json, Sandbox, SessionState};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/status-fd")
}

fn expected() -> Json {
    let path = fixtures().join("expected.json");
    Json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

fn replay(stream: &Json) -> Sandbox {
    Sandbox::new()
        .binary(fixtures().join("replay.sh"))
        .host_env("ZB_REPLAY_STREAM", fixtures().join(stream["file"].as_str().unwrap()))
        .host_env("ZB_REPLAY_EXIT", stream["zerobox_exit"].as_i64().unwrap().to_string())
}

fn opt_i32(v: &Json) -> Option<i32> {
    v.as_i64().map(|n| i32::try_from(n).unwrap())
}

#[test]
fn golden_streams() {
    let exp = expected();
    assert_eq!(exp["protocol"].as_i64(), Some(1));
    let streams = exp["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 6);
    for s in streams {
        let file = s["file"].as_str().unwrap();
        let got = replay(s).run("true", [] as [&str; 0]);
        if !s["error"].is_null() {
            let e = got.expect_err(file);
            assert_eq!(e.kind().as_str(), s["error"]["kind"].as_str().unwrap(), "{file}");
            match e {
                Error::Sandbox { message, exit_code, .. } => {
                    assert_eq!(message, s["error"]["message"].as_str().unwrap(), "{file}");
                    assert_eq!(exit_code, opt_i32(&s["zerobox_exit"]), "{file}");
                }
                other => panic!("{file}: {other:?}"),
            }
            continue;
        }
        let out = got.unwrap_or_else(|e| panic!("{file}: {e}"));
        let want = &s["result"];
        assert_eq!(out.events.len() as u64, s["events"].as_u64().unwrap(), "{file}");
        assert!(out.events.iter().all(|e| e["v"].as_i64() == Some(1)), "{file}");
        assert_eq!(
            (out.exit_code, out.signal, out.pid.map(u64::from)),
            (opt_i32(&want["exit_code"]), opt_i32(&want["signal"]), want["pid"].as_u64()),
            "{file}"
        );
        let ws = &want["session"];
        match &out.session {
            None => assert!(ws.is_null(), "{file}: no session"),
            Some(session) => {
                assert_eq!(session.id, ws["id"].as_str().unwrap(), "{file}");
                assert_eq!(session.state, SessionState::parse(ws["state"].as_str().unwrap()), "{file}");
                assert_eq!(session.changes, ws["changes"].as_u64().unwrap(), "{file}");
            }
        }
        let net: Vec<(String, u64, String, String)> = out
            .events
            .iter()
            .filter(|e| e["event"].as_str() == Some("net"))
            .map(|e| {
                let s = |k: &str| e[k].as_str().unwrap().to_string();
                (s("host"), e["port"].as_u64().unwrap(), s("action"), s("reason"))
            })
            .collect();
        let want_net: Vec<(String, u64, String, String)> = want["net"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let s = |k: &str| e[k].as_str().unwrap().to_string();
                (s("host"), e["port"].as_u64().unwrap(), s("action"), s("reason"))
            })
            .collect();
        assert_eq!(net, want_net, "{file}");
    }
}

#[test]
fn error_kinds() {
    let e = Sandbox::new().binary("/nonexistent/zerobox").run("true", [] as [&str; 0]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BinaryNotFound);
    assert_eq!(e.kind().as_str(), "binary_not_found");
    assert_eq!(Error::Protocol("x".into()).kind().as_str(), "protocol");
    let killed = Error::Killed { stdout: Vec::new(), stderr: Vec::new() };
    assert_eq!(killed.kind().as_str(), "cancelled");
}

#[test]
fn strict_flag() {
    let flags = |sb: Sandbox| sb.flags().unwrap().into_iter().map(|f| f.into_string().unwrap()).collect::<Vec<_>>();
    assert!(flags(Sandbox::new().strict(true)).contains(&"--strict-sandbox".to_string()));
    assert!(!flags(Sandbox::new()).contains(&"--strict-sandbox".to_string()));
}
