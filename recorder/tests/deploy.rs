//! The systemd unit and timer in recorder/deploy/ (docs/recorder.md) pass `systemd-analyze verify` with no
//! warning, the unit pointing at the binary this build made.

use std::process::Command;

#[test]
fn the_systemd_unit_and_timer_verify_cleanly() {
    let Ok(version) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("systemd-analyze is not installed here: the unit files are not verified");
        return;
    };
    assert!(version.status.success());
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let dir = std::env::temp_dir().join(format!("recorder-units-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let unit = std::fs::read_to_string(deploy.join("runtime-sandbox-recorder.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/bin/runtime-sandbox-recorder "), "the package's path");
    let unit = unit.replace("/usr/bin/runtime-sandbox-recorder", env!("CARGO_BIN_EXE_runtime-sandbox-recorder"));
    std::fs::write(dir.join("runtime-sandbox-recorder.service"), unit).unwrap();
    std::fs::copy(deploy.join("runtime-sandbox-recorder.timer"), dir.join("runtime-sandbox-recorder.timer")).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(dir.join("runtime-sandbox-recorder.service"))
        .arg(dir.join("runtime-sandbox-recorder.timer"))
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success() && said.trim().is_empty(), "systemd-analyze verify: {said}");
    // The environment file names only variables the recorder reads.
    let env = std::fs::read_to_string(deploy.join("recorder.env")).unwrap();
    for line in env.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let name = line.split('=').next().unwrap();
        assert!(
            name.starts_with("RUNTIME_SANDBOX_") || name.starts_with("DAYTONA_") || name.starts_with("PG"),
            "{name}"
        );
    }
}
