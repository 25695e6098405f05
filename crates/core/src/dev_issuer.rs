//! Development-mode issuer: an ES256 key generated into the data directory, published at the
//! gateway's own discovery and JWKS URLs, so `serve --dev` validates tokens exactly as
//! production does. Without `--dev` this key is never created or loaded.

use std::path::{Path, PathBuf};

use anyhow::Context;
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::{
    rand::SystemRandom,
    signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING},
};
use serde::Serialize;
use sha2::{Digest, Sha256};

pub const DEV_ISSUER_PATH: &str = "/dev/oidc";
const KEY_FILE: &str = "dev-signing-key.p8";

pub struct DevIssuer {
    issuer: String,
    audience: String,
    kid: String,
    pkcs8: Vec<u8>,
    jwk: serde_json::Value,
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    aud: &'a str,
    sub: &'a str,
    iat: i64,
    nbf: i64,
    exp: i64,
    roles: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    org: Option<&'a str>,
}

pub fn issuer_for(public_url: &str) -> String {
    format!("{}{DEV_ISSUER_PATH}", public_url.trim_end_matches('/'))
}

impl DevIssuer {
    pub fn key_path(data_dir: &Path) -> PathBuf {
        data_dir.join(KEY_FILE)
    }

    /// Loads the dev key from `data_dir`, creating it on first use.
    pub fn load_or_create(
        data_dir: &Path,
        public_url: &str,
        audience: &str,
    ) -> anyhow::Result<Self> {
        let path = Self::key_path(data_dir);
        let pkcs8 = if path.exists() {
            std::fs::read(&path).with_context(|| format!("Failed to read {}", path.display()))?
        } else {
            crate::key_file::create_private_dir(data_dir)?;
            let doc = EcdsaKeyPair::generate_pkcs8(
                &ECDSA_P256_SHA256_FIXED_SIGNING,
                &SystemRandom::new(),
            )
            .map_err(|_| anyhow::anyhow!("Failed to generate the development key"))?;
            write_private(&path, doc.as_ref())?;
            doc.as_ref().to_vec()
        };
        let pair = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            &pkcs8,
            &SystemRandom::new(),
        )
        .map_err(|_| anyhow::anyhow!("{} is not a P-256 PKCS#8 key", path.display()))?;
        // Uncompressed SEC1 point: 0x04 || x || y.
        let point = pair.public_key().as_ref();
        let kid = hex::encode(&Sha256::digest(point)[..8]);
        let jwk = serde_json::json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Ok(Self {
            issuer: issuer_for(public_url),
            audience: audience.to_owned(),
            kid,
            pkcs8,
            jwk,
        })
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn discovery_document(&self) -> serde_json::Value {
        serde_json::json!({
            "issuer": self.issuer,
            "authorization_endpoint": format!("{}/authorize", self.issuer),
            "token_endpoint": format!("{}/token", self.issuer),
            "jwks_uri": format!("{}/jwks.json", self.issuer),
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
            "grant_types_supported": ["client_credentials"],
        })
    }

    pub fn jwks(&self) -> serde_json::Value {
        serde_json::json!({ "keys": [self.jwk] })
    }

    /// Mints a token valid from `now` for `ttl_seconds`.
    pub fn mint(
        &self,
        sub: &str,
        roles: &[String],
        org: Option<&str>,
        ttl_seconds: i64,
    ) -> anyhow::Result<String> {
        let now = chrono::Utc::now().timestamp();
        self.mint_at(sub, roles, org, now, now + ttl_seconds)
    }

    /// Mints a token with explicit validity bounds (tests use it for expired tokens).
    pub fn mint_at(
        &self,
        sub: &str,
        roles: &[String],
        org: Option<&str>,
        nbf: i64,
        exp: i64,
    ) -> anyhow::Result<String> {
        let claims = Claims {
            iss: &self.issuer,
            aud: &self.audience,
            sub,
            iat: nbf,
            nbf,
            exp,
            roles,
            org,
        };
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        Ok(jsonwebtoken::encode(
            &header,
            &claims,
            &EncodingKey::from_ec_der(&self.pkcs8),
        )?)
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(bytes)?;
    Ok(())
}
