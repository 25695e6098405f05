//! The gateway's own secrets: the vault that seals the study noise keys in the database and the
//! key that signs the audit log's checkpoints (key files as `ehds_core::key_file` creates them).

use anyhow::Context;
use ehds_core::key_file::load_or_create;

/// Seals the per-study noise keys kept in the database with a key-encryption key that lives in
/// a file beside it (mode 0600), so that reading the database (a dump, a replica, a backup) does
/// not reveal the noise that protects a released model. ChaCha20-Poly1305 with a random nonce;
/// the study id is the associated data, so a sealed key cannot be moved to another study.
pub struct KeyVault {
    key: ring::aead::LessSafeKey,
}

const SEALED_PREFIX: &[u8] = b"EHDS-SEALED-1:";
const VAULT_KEY_FILE: &str = "noise-keys.kek";

impl KeyVault {
    /// The vault of `data_dir`, creating its key on first use.
    pub fn load_or_create(data_dir: &std::path::Path) -> anyhow::Result<Self> {
        let path = data_dir.join(VAULT_KEY_FILE);
        let (bytes, created) = load_or_create(&path)?;
        if created {
            tracing::warn!(path = %path.display(), "created a new key for the study noise keys; back it up with the database");
        }
        Self::from_bytes(&bytes[..32])
    }

    pub fn from_bytes(key: &[u8]) -> anyhow::Result<Self> {
        let unbound = ring::aead::UnboundKey::new(&ring::aead::CHACHA20_POLY1305, key)
            .map_err(|_| anyhow::anyhow!("the vault key must be 32 bytes"))?;
        Ok(Self {
            key: ring::aead::LessSafeKey::new(unbound),
        })
    }

    pub fn is_sealed(stored: &[u8]) -> bool {
        stored.starts_with(SEALED_PREFIX)
    }

    pub fn seal(&self, owner: &[u8], secret: &[u8]) -> anyhow::Result<Vec<u8>> {
        let mut nonce = [0u8; ring::aead::NONCE_LEN];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut nonce)
            .map_err(|_| anyhow::anyhow!("no secure randomness available"))?;
        let mut buf = secret.to_vec();
        self.key
            .seal_in_place_append_tag(
                ring::aead::Nonce::assume_unique_for_key(nonce),
                ring::aead::Aad::from(owner),
                &mut buf,
            )
            .map_err(|_| anyhow::anyhow!("sealing failed"))?;
        Ok([SEALED_PREFIX, &nonce, &buf].concat())
    }

    /// The secret of a sealed value. A value stored before sealing existed is returned as is
    /// (the gateway seals those at start-up).
    pub fn open(&self, owner: &[u8], stored: &[u8]) -> anyhow::Result<Vec<u8>> {
        let Some(rest) = stored.strip_prefix(SEALED_PREFIX) else {
            return Ok(stored.to_vec());
        };
        anyhow::ensure!(
            rest.len() > ring::aead::NONCE_LEN,
            "sealed key is truncated"
        );
        let (nonce, sealed) = rest.split_at(ring::aead::NONCE_LEN);
        let nonce = ring::aead::Nonce::try_assume_unique_for_key(nonce)
            .map_err(|_| anyhow::anyhow!("bad nonce"))?;
        let mut buf = sealed.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, ring::aead::Aad::from(owner), &mut buf)
            .map_err(|_| {
                anyhow::anyhow!("a sealed noise key does not open with this gateway's vault key")
            })?;
        Ok(plain.to_vec())
    }
}

const LOG_KEY_FILE: &str = "audit-log.key";

/// The key that signs the audit log's checkpoints, named `origin`: from `key_file`, or from
/// `audit-log.key` in `data_dir`, created (mode 0600) on first use. A key file holds the 32-byte
/// Ed25519 seed, or a signer key string `PRIVATE+KEY+<origin>+<id>+<base64>` whose name must be
/// `origin`.
pub fn load_log_signer(
    data_dir: &std::path::Path,
    key_file: Option<&std::path::Path>,
    origin: &str,
) -> anyhow::Result<translog::NoteSigner> {
    let signer = match key_file {
        Some(path) => {
            let bytes = std::fs::read(path)
                .with_context(|| format!("Failed to read the audit log key {}", path.display()))?;
            signer_from_bytes(&bytes, origin)
                .with_context(|| format!("The audit log key {} is unusable", path.display()))?
        }
        None => {
            let path = data_dir.join(LOG_KEY_FILE);
            let (bytes, created) = load_or_create(&path)?;
            if created {
                tracing::warn!(path = %path.display(), "created a new key that signs the audit log's checkpoints; back it up, and give auditors its verifier key");
            }
            signer_from_bytes(&bytes, origin)
                .with_context(|| format!("The audit log key {} is unusable", path.display()))?
        }
    };
    Ok(signer)
}

fn signer_from_bytes(bytes: &[u8], origin: &str) -> anyhow::Result<translog::NoteSigner> {
    if let Some(text) = bytes
        .strip_prefix(b"PRIVATE+KEY+")
        .and_then(|_| std::str::from_utf8(bytes).ok())
    {
        let signer = translog::NoteSigner::from_key_string(text.trim())
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        anyhow::ensure!(
            signer.name() == origin,
            "the key is named `{}`, but the log's origin is `{origin}` (audit.log_origin)",
            signer.name()
        );
        return Ok(signer);
    }
    let seed: [u8; 32] = bytes
        .get(..32)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| anyhow::anyhow!("a key file holds at least 32 bytes"))?;
    translog::NoteSigner::from_seed(origin, &seed).map_err(|e| {
        anyhow::anyhow!("the origin `{origin}` cannot name a key (no spaces or '+'): {e}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_key_is_a_seed_or_a_signer_key_named_after_the_origin() {
        let from_seed = signer_from_bytes(&[7u8; 32], "gw.example/audit").unwrap();
        assert_eq!(from_seed.name(), "gw.example/audit");
        let text = from_seed.to_key_string();
        let again = signer_from_bytes(text.as_bytes(), "gw.example/audit").unwrap();
        assert_eq!(again.verifier(), from_seed.verifier());
        let misnamed = signer_from_bytes(text.as_bytes(), "other.example/audit").unwrap_err();
        assert!(
            misnamed.to_string().contains("audit.log_origin"),
            "{misnamed}"
        );
        assert!(signer_from_bytes(&[7u8; 31], "gw.example/audit").is_err());
        assert!(signer_from_bytes(&[7u8; 32], "bad origin").is_err());
    }

    #[test]
    fn a_sealed_key_opens_only_for_its_owner_and_with_its_vault() {
        let vault = KeyVault::from_bytes(&[7u8; 32]).unwrap();
        let sealed = vault.seal(b"study-a", &[1u8; 32]).unwrap();
        assert!(KeyVault::is_sealed(&sealed));
        assert!(!sealed.windows(32).any(|w| w == [1u8; 32]));
        assert_eq!(vault.open(b"study-a", &sealed).unwrap(), vec![1u8; 32]);
        assert!(vault.open(b"study-b", &sealed).is_err());
        let other = KeyVault::from_bytes(&[8u8; 32]).unwrap();
        assert!(other.open(b"study-a", &sealed).is_err());
        // Keys stored before sealing existed read as they are.
        assert_eq!(vault.open(b"study-a", &[2u8; 32]).unwrap(), vec![2u8; 32]);
    }
}
