//! Secret keys: fresh ones from the operating system, and key files created once with owner-only
//! permissions and read back on every start.

use anyhow::Context;

/// 32 bytes from the operating system's secure generator.
pub fn random_key() -> anyhow::Result<[u8; 32]> {
    random_bytes()
}

/// `N` bytes from the operating system's secure generator.
pub fn random_bytes<const N: usize>() -> anyhow::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| anyhow::anyhow!("no secure randomness available"))?;
    Ok(bytes)
}

/// The key in `path`, which must hold at least 32 bytes; created (mode 0600) when absent.
/// Returns the key and whether it was created now.
pub fn load_or_create(path: &std::path::Path) -> anyhow::Result<(Vec<u8>, bool)> {
    use std::io::Write;
    if path.exists() {
        let bytes =
            std::fs::read(path).with_context(|| format!("Failed to read {}", path.display()))?;
        anyhow::ensure!(
            bytes.len() >= 32,
            "{} is shorter than 32 bytes",
            path.display()
        );
        return Ok((bytes, false));
    }
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    let key = random_key()?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .with_context(|| format!("Failed to create {}", path.display()))?
        .write_all(&key)?;
    Ok((key.to_vec(), true))
}

/// Creates `dir` and its missing parents with owner-only access (0700).
pub fn create_private_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .with_context(|| format!("Failed to create {}", dir.display()))
}
