//! TLS for the database edge (rustls, the stack the Daytona client uses):
//! libpq's `sslmode` verification levels as rustls client configurations, the
//! certificate files read, and a TLS failure in words for both edges.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::Path;
use std::sync::Arc;

/// What of the server's certificate is checked.
#[derive(Debug)]
pub enum Verify {
    /// Nothing (libpq's `require` and `prefer` without a root certificate): encrypted, not authenticated.
    Nothing,
    /// The chain up to these roots, not the host name (`verify-ca`, and `require` with a root certificate).
    Chain(RootCertStore),
    /// The chain and the host name (`verify-full`).
    Full(RootCertStore),
}

/// ring, as the Daytona client's rustls uses (its post-quantum key exchange is aws-lc-rs's only).
#[allow(deprecated)]
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates of a PEM file (at least one).
pub fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no PEM certificate in it", path.display()));
    }
    Ok(certs)
}

/// The roots of a PEM file.
pub fn roots(path: &Path) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    for cert in certificates(path)? {
        store.add(cert).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(store)
}

/// The roots Daytona's client trusts by default (sslrootcert=system).
pub fn bundled_roots() -> RootCertStore {
    RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() }
}

/// A client certificate and its key (libpq's sslcert, sslkey).
pub fn client_identity(cert: &Path, key: &Path) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    Ok((certificates(cert)?, key))
}

/// The rustls configuration for a verification level.
pub fn client_config(
    verify: Verify,
    identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
) -> Result<ClientConfig, String> {
    let provider = provider();
    let verifier: Arc<dyn ServerCertVerifier> = match verify {
        Verify::Nothing => Arc::new(AcceptAny(Arc::clone(&provider))),
        Verify::Chain(roots) | Verify::Full(roots) if roots.is_empty() => return Err("no root certificate".into()),
        Verify::Chain(roots) => Arc::new(ChainOnly(web_pki(roots, &provider)?)),
        Verify::Full(roots) => web_pki(roots, &provider)?,
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    match identity {
        None => Ok(builder.with_no_client_auth()),
        Some((certs, key)) => builder.with_client_auth_cert(certs, key).map_err(|e| format!("the client certificate: {e}")),
    }
}

fn web_pki(roots: RootCertStore, provider: &Arc<CryptoProvider>) -> Result<Arc<WebPkiServerVerifier>, String> {
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider)).build().map_err(|e| e.to_string())
}

/// libpq's `require` without a root certificate: any certificate (the handshake's signatures still checked).
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// libpq's `verify-ca`: the chain, not the name.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // webpki checks the name after the chain: a name error means the chain passed.
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. })) => {
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The rustls error somewhere in an error's chain (an `io::Error` may carry
/// it, itself inside another).
pub fn find<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut next: Option<&'a (dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        next = match e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    None
}

/// A TLS failure in words.
pub fn cause(error: &rustls::Error) -> String {
    use CertificateError as C;
    match error {
        rustls::Error::InvalidCertificate(C::UnknownIssuer) => "TLS: the server's certificate is signed by an unknown CA".into(),
        rustls::Error::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
            "TLS: the server's certificate is not valid for this host name".into()
        }
        rustls::Error::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => "TLS: the server's certificate has expired".into(),
        other => format!("TLS: {other}"),
    }
}
