//! libpq's password file (`~/.pgpass`, or `PGPASSFILE`), read as libpq reads
//! it: `host:port:database:user:password` lines, `*` matching anything, `\`
//! escaping `:` and `\`, the first matching line winning, a Unix-socket
//! connection matching the host `localhost`. Pure: the caller reads the file.

/// The password of the first line matching the connection, if any.
pub fn lookup(contents: &str, host: &str, port: u16, database: &str, user: &str) -> Option<String> {
    // libpq matches a socket directory (or an empty host) as "localhost".
    let host = if host.is_empty() || host.starts_with('/') || host.starts_with('@') { "localhost" } else { host };
    let port = port.to_string();
    contents.lines().find_map(|line| {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            return None;
        }
        let fields = split(line);
        if fields.len() < 5 {
            return None;
        }
        let matches = |field: &str, value: &str| field == "*" || field == value;
        (matches(&fields[0], host) && matches(&fields[1], &port) && matches(&fields[2], database) && matches(&fields[3], user))
            .then(|| fields[4..].join(":"))
    })
}

/// The fields of a line: `:` separates, `\` takes the next character as it is.
fn split(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().expect("one field at least").push(next);
                }
            }
            // The password is the rest of the line, its colons included (libpq stops splitting there).
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().expect("one field at least").push(c),
        }
    }
    fields
}

/// Whether libpq would read a password file of this mode: not if the group
/// or others may read or write it (it warns and ignores the file).
pub fn mode_allowed(mode: u32) -> bool {
    mode & 0o077 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_line_wins_with_wildcards_and_escapes() {
        let file = "# a comment\n\
                    db.example:5432:app:ledger:first\n\
                    *:*:app:ledger:second\n\
                    localhost:5433:*:rec\\:order:co\\:lon:and:more\n\
                    *:*:*:*:fallback\n";
        assert_eq!(lookup(file, "db.example", 5432, "app", "ledger").as_deref(), Some("first"));
        assert_eq!(lookup(file, "other", 5432, "app", "ledger").as_deref(), Some("second"));
        assert_eq!(lookup(file, "/var/run/postgresql", 5433, "x", "rec:order").as_deref(), Some("co:lon:and:more"));
        assert_eq!(lookup(file, "db.example", 5432, "other", "ledger").as_deref(), Some("fallback"));
        assert_eq!(lookup("h:1:d:u\n", "h", 1, "d", "u"), None, "a line without a password");
        assert_eq!(lookup("", "h", 1, "d", "u"), None);
    }

    #[test]
    fn a_file_others_may_read_is_ignored() {
        assert!(mode_allowed(0o600) && mode_allowed(0o400));
        assert!(!mode_allowed(0o640) && !mode_allowed(0o604) && !mode_allowed(0o666));
    }
}
