//! A vector of ring elements in serialised relay state, packed: little-endian words as wide as
//! its largest element needs, base64-encoded. The relay's state is stored between messages and
//! read back for each message and each holder's poll (the gateway keeps it in its database), and
//! its running sum has one entry per model parameter: at a million entries, a JSON array of
//! numbers is about 11 MB to write and parse each time, the packed form 5.3 MB of base64 in
//! `Z_2^32` (4 MB in `Z_2^24`) with no number formatting, and an all-zero sum (before the first
//! masked input) a few bytes. The plain array form is still read, so state serialised before
//! packing loads.

use base64::{engine::general_purpose::STANDARD, Engine};
use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Packed {
    len: usize,
    /// Bytes per element, 0 (all zero) to 8.
    width: u8,
    le: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Packed(Packed),
    Plain(Vec<u64>),
}

pub fn serialize<S: Serializer>(v: &[u64], s: S) -> Result<S::Ok, S::Error> {
    let largest = v.iter().copied().max().unwrap_or(0);
    let width = (u64::BITS - largest.leading_zeros()).div_ceil(8) as usize;
    Packed {
        len: v.len(),
        width: width as u8,
        le: STANDARD.encode(to_le(v, width)),
    }
    .serialize(s)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    let packed = match Stored::deserialize(d)? {
        Stored::Plain(v) => return Ok(v),
        Stored::Packed(p) => p,
    };
    let width = packed.width as usize;
    if width > 8 {
        return Err(D::Error::custom(format!(
            "packed width {width} above 8 bytes"
        )));
    }
    let bytes = STANDARD.decode(&packed.le).map_err(D::Error::custom)?;
    if Some(bytes.len()) != packed.len.checked_mul(width) {
        return Err(D::Error::custom(format!(
            "{} packed bytes for {} elements of {width} bytes",
            bytes.len(),
            packed.len
        )));
    }
    if width == 0 {
        return Ok(vec![0; packed.len]);
    }
    Ok(from_le(&bytes, width))
}

/// Each word as its `width` low bytes, little-endian (`width` in 1..=8, every word below
/// `2^(8 width)`); also the stored form of a running sum (`crate::sum`).
pub(crate) fn to_le(words: &[u64], width: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(words.len() * width);
    for x in words {
        bytes.extend_from_slice(&x.to_le_bytes()[..width]);
    }
    bytes
}

/// The words [`to_le`] wrote; `bytes` holds a whole number of `width`-byte words.
pub(crate) fn from_le(bytes: &[u8], width: usize) -> Vec<u64> {
    bytes
        .chunks_exact(width)
        .map(|c| {
            let mut word = [0u8; 8];
            word[..width].copy_from_slice(c);
            u64::from_le_bytes(word)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Holder(#[serde(with = "super")] Vec<u64>);

    fn round_trip(v: Vec<u64>) -> String {
        let text = serde_json::to_string(&Holder(v.clone())).unwrap();
        assert_eq!(serde_json::from_str::<Holder>(&text).unwrap(), Holder(v));
        text
    }

    /// Hand-checked encodings: zeros take no bytes, 0x0102 two bytes little-endian
    /// (`AgEAAA==` is 02 01 00 00), and the widest element sets the width.
    #[test]
    fn packs_to_the_widest_element() {
        assert_eq!(round_trip(vec![0; 5]), r#"{"len":5,"width":0,"le":""}"#);
        assert_eq!(
            round_trip(vec![0x0102, 0]),
            r#"{"len":2,"width":2,"le":"AgEAAA=="}"#
        );
        round_trip(vec![u64::MAX, 1, 0, (1 << 32) - 1]);
        round_trip(vec![]);
    }

    #[test]
    fn reads_the_plain_array_and_refuses_inconsistent_packing() {
        let plain: Holder = serde_json::from_str("[3, 0, 4294967295]").unwrap();
        assert_eq!(plain, Holder(vec![3, 0, 4_294_967_295]));
        for bad in [
            r#"{"len":3,"width":2,"le":"AgEAAA=="}"#,
            r#"{"len":1,"width":9,"le":"AAAAAAAAAAAA"}"#,
            r#"{"len":1,"width":1,"le":"not base64!"}"#,
        ] {
            assert!(serde_json::from_str::<Holder>(bad).is_err(), "{bad}");
        }
    }
}
