//! The C2SP `tlog-checkpoint` note text: origin, tree size, base64 root hash, then optional
//! non-empty extension lines, each ending in a newline.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use crate::hash::{Hash, HASH_LEN};
use crate::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
    pub extensions: Vec<String>,
}

impl Checkpoint {
    pub fn new(origin: impl Into<String>, size: u64, root: Hash) -> Result<Self, Error> {
        let cp = Self {
            origin: origin.into(),
            size,
            root,
            extensions: Vec::new(),
        };
        cp.check_lines()?;
        Ok(cp)
    }

    /// The note text to sign: every line ends in `\n`.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            STANDARD.encode(self.root)
        );
        for e in &self.extensions {
            s.push_str(e);
            s.push('\n');
        }
        s
    }

    /// Parses a checkpoint body (the text of a signed note, signatures already removed).
    pub fn parse(text: &str) -> Result<Self, Error> {
        let body = text
            .strip_suffix('\n')
            .ok_or(Error::MalformedCheckpoint("text must end in a newline"))?;
        let mut lines = body.split('\n');
        let origin = lines.next().unwrap_or_default().to_owned();
        let size_line = lines
            .next()
            .ok_or(Error::MalformedCheckpoint("missing tree size"))?;
        let root_line = lines
            .next()
            .ok_or(Error::MalformedCheckpoint("missing root hash"))?;
        let extensions: Vec<String> = lines.map(str::to_owned).collect();
        if size_line.is_empty()
            || !size_line.bytes().all(|b| b.is_ascii_digit())
            || (size_line.len() > 1 && size_line.starts_with('0'))
        {
            return Err(Error::MalformedCheckpoint(
                "tree size must be decimal without leading zeros",
            ));
        }
        let size = size_line
            .parse()
            .map_err(|_| Error::MalformedCheckpoint("tree size does not fit 64 bits"))?;
        let root: Hash = STANDARD
            .decode(root_line)
            .ok()
            .and_then(|v| <[u8; HASH_LEN]>::try_from(v).ok())
            .ok_or(Error::MalformedCheckpoint(
                "root hash must be base64 of 32 bytes",
            ))?;
        let cp = Self {
            origin,
            size,
            root,
            extensions,
        };
        cp.check_lines()?;
        Ok(cp)
    }

    fn check_lines(&self) -> Result<(), Error> {
        if self.origin.is_empty() {
            return Err(Error::MalformedCheckpoint("origin must be non-empty"));
        }
        if self.origin.contains('\n') || self.extensions.iter().any(|e| e.contains('\n')) {
            return Err(Error::MalformedCheckpoint("a line holds a newline"));
        }
        if self.extensions.iter().any(String::is_empty) {
            return Err(Error::MalformedCheckpoint(
                "extension lines must be non-empty",
            ));
        }
        Ok(())
    }
}
