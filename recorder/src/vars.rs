//! The environment as the edges read it (the run passes the process's, the
//! tests their own).

/// A variable that is set and not empty (as libpq and OpenSSL read theirs).
pub fn set(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.is_empty())
}
