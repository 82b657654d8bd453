//! libpq's TLS parameters taken out of a connection string or URI, before
//! the rest goes to the driver (which knows only `sslmode` disable, prefer
//! and require, and none of the certificate files). Pure.

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub fn parse(text: &str) -> Result<SslMode, String> {
        Ok(match text {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => return Err(format!("sslmode {other:?}: not disable, allow, prefer, require, verify-ca or verify-full")),
        })
    }
}

/// The TLS parameters of a connection (None: not given there).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsParams {
    pub sslmode: Option<String>,
    pub sslrootcert: Option<String>,
    pub sslcert: Option<String>,
    pub sslkey: Option<String>,
}

impl TlsParams {
    fn take(&mut self, key: &str, value: String) -> bool {
        let slot = match key {
            "sslmode" => &mut self.sslmode,
            "sslrootcert" => &mut self.sslrootcert,
            "sslcert" => &mut self.sslcert,
            "sslkey" => &mut self.sslkey,
            _ => return false,
        };
        *slot = Some(value);
        true
    }
}

/// libpq parameters the program cannot honour in a connection string: named, never dropped.
const UNSUPPORTED: &[&str] =
    &["sslcrl", "sslcrldir", "sslpassword", "sslsni", "requiressl", "sslnegotiation", "gssencmode", "hostaddr"];

/// The connection string without its TLS parameters, and those parameters.
pub fn take_tls(conninfo: &str) -> Result<(String, TlsParams), String> {
    let trimmed = conninfo.trim_start();
    if trimmed.starts_with("postgres://") || trimmed.starts_with("postgresql://") {
        take_from_uri(trimmed)
    } else {
        take_from_pairs(conninfo)
    }
}

fn take_from_uri(uri: &str) -> Result<(String, TlsParams), String> {
    let mut params = TlsParams::default();
    let Some((base, query)) = uri.split_once('?') else { return Ok((uri.to_string(), params)) };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(key)?;
        if UNSUPPORTED.contains(&key.as_str()) || key == "service" {
            return Err(format!("the parameter {key} is not supported by this program in a URI"));
        }
        if !params.take(&key, decode(value)?) {
            kept.push(pair);
        }
    }
    let rest = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    Ok((rest, params))
}

/// Percent-decoding of a URI component.
fn decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3).ok_or_else(|| format!("{text:?}: a truncated %-escape"))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("{text:?}: a bad %-escape"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{text:?}: not UTF-8"))
}

fn take_from_pairs(conninfo: &str) -> Result<(String, TlsParams), String> {
    let mut params = TlsParams::default();
    let mut kept = Vec::new();
    for (key, value) in parse_pairs(conninfo)? {
        if UNSUPPORTED.contains(&key.as_str()) {
            return Err(format!("the parameter {key} is not supported by this program"));
        }
        if !params.take(&key, value.clone()) {
            kept.push((key, value));
        }
    }
    Ok((render(&kept), params))
}

/// Whether a connection string is a URI (else `key=value` pairs).
pub fn is_uri(conninfo: &str) -> bool {
    let trimmed = conninfo.trim_start();
    trimmed.starts_with("postgres://") || trimmed.starts_with("postgresql://")
}

/// The `key=value` pairs of a connection string, values unquoted.
pub fn parse_pairs(conninfo: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    let mut chars = conninfo.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') {
            return Err(format!("{key:?} is not followed by \"=\""));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            loop {
                match chars.next() {
                    Some('\\') => value.push(chars.next().ok_or("an unterminated quoted value")?),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => return Err("an unterminated quoted value".into()),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                chars.next();
                if c == '\\' {
                    value.push(chars.next().ok_or("a backslash at the end")?);
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
    Ok(pairs)
}

/// Pairs as a connection string (every value quoted).
pub fn render(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(key, value)| format!("{key}='{}'", value.replace('\\', "\\\\").replace('\'', "\\'")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The parameters of service `name` in a connection service file (libpq's
/// `pg_service.conf`: `[name]` sections of `key=value` lines, `#` comments);
/// None when the file has no such section.
pub fn service(contents: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut section: Option<Vec<(String, String)>> = None;
    for line in contents.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if section.is_some() {
                break;
            }
            if header.trim() == name {
                section = Some(Vec::new());
            }
            continue;
        }
        if let (Some(pairs), Some((key, value))) = (section.as_mut(), line.split_once('=')) {
            pairs.push((key.trim().to_string(), value.trim().to_string()));
        }
    }
    section
}

/// `pairs` with the defaults each key lacks (libpq's order: the connection's
/// own, then its service's, then the environment's).
pub fn with_defaults(mut pairs: Vec<(String, String)>, defaults: &[(String, String)]) -> Vec<(String, String)> {
    for (key, value) in defaults {
        if !pairs.iter().any(|(k, _)| k == key) {
            pairs.push((key.clone(), value.clone()));
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_come_out_of_a_connection_string() {
        let (rest, tls) =
            take_tls(r"host=db.example  port = 5432 sslmode=verify-full sslrootcert='/etc/my ca.pem' password='it\'s' user=rec")
                .unwrap();
        assert_eq!(tls.sslmode.as_deref(), Some("verify-full"));
        assert_eq!(tls.sslrootcert.as_deref(), Some("/etc/my ca.pem"));
        assert!(rest.contains("host='db.example'") && rest.contains("port='5432'") && rest.contains("user='rec'"), "{rest}");
        assert!(!rest.contains("ssl"), "{rest}");
    }

    #[test]
    fn quoting_and_escapes_survive() {
        let (rest, _) = take_tls(r"password='a\'b c' application_name=x\ y").unwrap();
        assert_eq!(rest, r"password='a\'b c' application_name='x y'");
        assert!(take_tls("host").is_err());
        assert!(take_tls("password='open").is_err());
    }

    #[test]
    fn tls_parameters_come_out_of_a_uri() {
        let (rest, tls) = take_tls(
            "postgresql://rec@db.example:5432/app?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&target_session_attrs=read-write",
        )
        .unwrap();
        assert_eq!(rest, "postgresql://rec@db.example:5432/app?target_session_attrs=read-write");
        assert_eq!((tls.sslmode.as_deref(), tls.sslrootcert.as_deref()), (Some("verify-full"), Some("/etc/ca.pem")));
        let (rest, tls) = take_tls("postgres://h/db?sslmode=require").unwrap();
        assert_eq!((rest.as_str(), tls.sslmode.as_deref()), ("postgres://h/db", Some("require")));
        assert_eq!(take_tls("postgres://h/db").unwrap().0, "postgres://h/db");
    }

    #[test]
    fn what_the_program_cannot_honour_is_named() {
        assert!(take_tls("gssencmode=require").unwrap_err().contains("gssencmode"));
        assert!(take_tls("postgres://h/db?service=x").unwrap_err().contains("service"));
        assert!(take_tls("postgres://h/db?sslcrl=/x").unwrap_err().contains("sslcrl"));
        assert_eq!(SslMode::parse("verify-ca"), Ok(SslMode::VerifyCa));
        assert!(SslMode::parse("verify_full").is_err());
    }


    #[test]
    fn a_service_file_section_and_the_order_of_defaults() {
        let file = "# comment\n[other]\nhost=elsewhere\n[ledger]\nhost = db.example\nport=5433\ndbname=app\n\n[next]\nhost=x\n";
        let ledger = service(file, "ledger").unwrap();
        assert_eq!(ledger, [("host".into(), "db.example".into()), ("port".into(), "5433".into()), ("dbname".into(), "app".into())]);
        assert_eq!(service(file, "missing"), None);
        let own = parse_pairs("dbname=mine user=rec").unwrap();
        let merged = with_defaults(own, &ledger);
        assert_eq!(render(&merged), "dbname='mine' user='rec' host='db.example' port='5433'");
        assert_eq!(parse_pairs(&render(&[("password".into(), r"a'b\c".into())])).unwrap(), [("password".to_string(), r"a'b\c".to_string())]);
    }
}
