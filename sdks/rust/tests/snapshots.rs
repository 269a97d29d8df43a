//! Snapshot sessions: review, diff, accept, restore, discard. Against the real binary.

mod common;

use common::TempDir;
use zerobox::{ChangeKind, DiffOptions, Error, ForceOptions, SessionState, SnapshotMode, Snapshots};

#[test]
fn review_diff_accept_restore() {
    let t = TempDir::new("snap");
    let work = t.join("work");
    std::fs::create_dir(&work).unwrap();
    let old = work.join("file.txt");
    std::fs::write(&old, "before\n").unwrap();
    let new = work.join("new.txt");

    let sb = t.sandbox().allow_write([&work]).cwd(&work).snapshot(SnapshotMode::Review).snapshot_paths([&work]);
    let out = sb.run("sh", ["-c", "echo after > file.txt; echo hello > new.txt"]).unwrap();
    assert_eq!(out.exit_code, Some(0), "{}", out.stderr_text());
    let session = out.session.expect("a review run reports its session");
    assert_eq!(session.state, SessionState::Pending);
    assert_eq!(session.changes, 2);
    assert_eq!(session.id.len(), 32);
    // Review: nothing is applied yet.
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "before\n");
    assert!(!new.exists());

    let snaps = sb.snapshots();
    let diff = snaps.diff(&session.id, DiffOptions::default()).unwrap();
    assert_eq!(diff.session, session.id);
    let kinds: Vec<_> = diff.changes.iter().map(|c| (c.path.clone(), c.kind.clone())).collect();
    assert_eq!(kinds, [(old.clone(), ChangeKind::Modified), (new.clone(), ChangeKind::Added)]);
    let added = &diff.changes[1];
    assert_eq!((added.old_size, added.new_size), (None, Some(6)));
    assert_eq!(added.new_type.as_deref(), Some("file"));
    let only_new = snaps.diff(&session.id, DiffOptions { paths: vec![new.clone()] }).unwrap();
    assert_eq!(only_new.changes.len(), 1);
    assert!(snaps.diff_text(&session.id).unwrap().contains("+after"));

    let listed = snaps.list().unwrap();
    assert!(listed.iter().any(|s| s.id == session.id && s.state == SessionState::Pending));
    let shown = snaps.show(&session.id[..12]).unwrap();
    assert_eq!((shown.id.as_str(), shown.mode.as_str(), shown.changes), (session.id.as_str(), "review", 2));
    assert_eq!(shown.command, ["sh", "-c", "echo after > file.txt; echo hello > new.txt"]);
    assert_eq!(shown.cwd.as_deref(), Some(work.as_path()));

    snaps.accept(&session.id, ForceOptions::default()).unwrap();
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "after\n");
    assert_eq!(std::fs::read_to_string(&new).unwrap(), "hello\n");
    assert_eq!(snaps.show(&session.id).unwrap().state, SessionState::Accepted);

    snaps.restore(&session.id, ForceOptions::default()).unwrap();
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "before\n");
    assert!(!new.exists());
    // Restoring twice is refused, with zerobox's message.
    match snaps.restore(&session.id, ForceOptions::default()) {
        Err(Error::Snapshot { message, exit_code, .. }) => {
            assert_eq!(exit_code, Some(1));
            assert!(message.contains("zerobox: error:"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // The restore is a session of its own, made by `restore`.
    let last = snaps.show("last").unwrap();
    assert_eq!((last.kind.as_str(), last.parent.as_deref()), ("restore", Some(session.id.as_str())));
}

#[test]
fn snapshot_and_restore_modes() {
    let t = TempDir::new("modes");
    let work = t.join("work");
    std::fs::create_dir(&work).unwrap();
    let f = work.join("f");
    let base = t.sandbox().allow_write([&work]).snapshot_paths([&work]).quiet(true);

    let out = base.clone().snapshot(SnapshotMode::Restore).run("sh", ["-c", &format!("echo x > {}", f.display())]);
    let out = out.unwrap();
    assert_eq!(out.session.as_ref().map(|s| &s.state), Some(&SessionState::Restored));
    assert!(!f.exists());
    assert!(out.stderr.is_empty(), "--quiet: {}", out.stderr_text());

    let out = base.clone().snapshot(SnapshotMode::Snapshot).run("sh", ["-c", &format!("echo x > {}", f.display())]);
    let session = out.unwrap().session.unwrap();
    assert_eq!(session.state, SessionState::Accepted);
    assert!(f.exists());
    base.snapshots().restore(&session.id, ForceOptions::default()).unwrap();
    assert!(!f.exists());
}

#[test]
fn excludes_are_applied_directly() {
    let t = TempDir::new("exclude");
    let work = t.join("work");
    std::fs::create_dir(&work).unwrap();
    let sb = t
        .sandbox()
        .allow_write([&work])
        .cwd(&work)
        .snapshot(SnapshotMode::Review)
        .snapshot_exclude(["*.log", "build/"]);
    let out = sb.run("sh", ["-c", "echo l > run.log; mkdir build; echo o > build/o; echo k > kept"]).unwrap();
    let session = out.session.unwrap();
    assert!(work.join("run.log").exists());
    assert!(work.join("build/o").exists());
    assert!(!work.join("kept").exists());
    let diff = sb.snapshots().diff(&session.id, DiffOptions::default()).unwrap();
    let paths: Vec<_> = diff.changes.iter().map(|c| c.path.clone()).collect();
    assert_eq!(paths, [work.join("kept")]);
}

#[test]
fn discard_and_unknown_ids() {
    let t = TempDir::new("discard");
    let work = t.join("work");
    std::fs::create_dir(&work).unwrap();
    let sb = t.sandbox().allow_write([&work]).snapshot(SnapshotMode::Review).snapshot_paths([&work]);
    let out = sb.run("sh", ["-c", &format!("echo new > {}/n", work.display())]).unwrap();
    let id = out.session.unwrap().id;
    let snaps = Snapshots::new().home(t.store());
    snaps.discard(&id).unwrap();
    assert!(!work.join("n").exists());
    assert_eq!(snaps.show(&id).unwrap().state, SessionState::Discarded);
    // The diff stays available.
    assert_eq!(snaps.diff(&id, DiffOptions::default()).unwrap().changes.len(), 1);
    assert!(matches!(snaps.accept(&id, ForceOptions::default()), Err(Error::Snapshot { .. })));
    match snaps.show("ffffffffffffffff") {
        Err(Error::Snapshot { message, .. }) => assert!(message.contains("no session matches"), "{message}"),
        other => panic!("expected an unknown id, got {other:?}"),
    }
    // Another store does not know the session.
    let other = TempDir::new("other-store");
    assert!(Snapshots::new().home(other.store()).show(&id).is_err());
    assert!(Snapshots::new().home(other.store()).list().unwrap().is_empty());
}

#[test]
fn forced_accept_over_a_conflict() {
    let t = TempDir::new("force");
    let work = t.join("work");
    std::fs::create_dir(&work).unwrap();
    let f = work.join("f");
    std::fs::write(&f, "v1\n").unwrap();
    let sb = t.sandbox().allow_write([&work]).cwd(&work).snapshot(SnapshotMode::Review);
    let id = sb.run("sh", ["-c", "echo v2 > f"]).unwrap().session.unwrap().id;
    std::fs::write(&f, "host edit\n").unwrap();
    let snaps = sb.snapshots();
    assert!(matches!(snaps.accept(&id, ForceOptions::default()), Err(Error::Snapshot { .. })));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "host edit\n");
    snaps.accept(&id, ForceOptions { force: true }).unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "v2\n");
    std::fs::write(&f, "later\n").unwrap();
    assert!(matches!(snaps.restore(&id, ForceOptions::default()), Err(Error::Snapshot { .. })));
    snaps.restore(&id, ForceOptions { force: true }).unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "host edit\n");
}
