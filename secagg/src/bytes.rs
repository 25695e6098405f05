//! Byte strings (public keys, session ids, share ciphertexts, revealed shares, fingerprints) in
//! serialised messages and relay state. Serde's default for `[u8; 32]` and `Vec<u8>` is a JSON
//! array of numbers, about 3.6 characters a byte and a number to parse for each; a relay that
//! stores its state and its nodes' messages as JSON reads and writes them for every message.
//! [`b64`] and [`b64_32`] write base64 instead (standard alphabet, padded: 1.33 characters a
//! byte, no numbers); [`array_32`] and [`array`] keep writing the array, for what nodes of an
//! earlier release must still read. Either form is read everywhere (`array`'s through
//! [`b64::deserialize`]), so state and messages written before load, and a node may send
//! either. Binary formats get the bytes as they are.

use std::fmt;

use base64::{engine::general_purpose::STANDARD, Engine};
use serde::{
    de::{Error as _, SeqAccess, Visitor},
    Deserializer, Serialize, Serializer,
};

/// Base64 text or an array of byte values, whichever the input holds.
struct AnyBytes;

impl<'de> Visitor<'de> for AnyBytes {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("base64 text or an array of byte values")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Vec<u8>, E> {
        STANDARD
            .decode(v)
            .map_err(|e| E::custom(format!("invalid base64: {e}")))
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
        Ok(v.to_vec())
    }

    fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(v)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(b) = seq.next_element::<u8>()? {
            out.push(b);
        }
        Ok(out)
    }
}

fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    if d.is_human_readable() {
        d.deserialize_any(AnyBytes)
    } else {
        d.deserialize_byte_buf(AnyBytes)
    }
}

fn read_32<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
    let v = read(d)?;
    let n = v.len();
    v.try_into()
        .map_err(|_| D::Error::custom(format!("{n} bytes where 32 belong")))
}

fn write_base64<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
    if s.is_human_readable() {
        s.serialize_str(&STANDARD.encode(v))
    } else {
        s.serialize_bytes(v)
    }
}

/// `Vec<u8>` written as base64.
pub mod b64 {
    use super::*;

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        write_base64(v, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        read(d)
    }
}

/// `[u8; 32]` written as base64.
pub mod b64_32 {
    use super::*;

    pub fn serialize<S: Serializer>(v: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        write_base64(v, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        read_32(d)
    }
}

/// Bytes written as an array of numbers (read with [`b64::deserialize`]).
pub mod array {
    use super::*;

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            v.serialize(s)
        } else {
            s.serialize_bytes(v)
        }
    }
}

/// `[u8; 32]` written as an array of numbers.
pub mod array_32 {
    use super::*;

    pub fn serialize<S: Serializer>(v: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            v.serialize(s)
        } else {
            s.serialize_bytes(v)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        read_32(d)
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Both {
        #[serde(with = "super::b64_32")]
        key: [u8; 32],
        #[serde(with = "super::b64")]
        text: Vec<u8>,
        #[serde(with = "super::array_32")]
        old_key: [u8; 32],
        #[serde(
            serialize_with = "super::array::serialize",
            deserialize_with = "super::b64::deserialize"
        )]
        old_text: Vec<u8>,
    }

    /// Hand-checked: 32 bytes of 0x01 are "AQEB…AQE=" (43 characters and padding), [0xfb, 0xff]
    /// is "+/8=" (the standard alphabet, not the URL-safe one).
    #[test]
    fn writes_base64_or_arrays_and_reads_either() {
        let v = Both {
            key: [1; 32],
            text: vec![0xfb, 0xff],
            old_key: [2; 32],
            old_text: vec![3, 4],
        };
        let text = serde_json::to_value(&v).unwrap();
        assert_eq!(text["key"], format!("{}AQE=", "AQEB".repeat(10)));
        assert_eq!(text["text"], "+/8=");
        assert_eq!(text["old_key"], serde_json::json!(vec![2u8; 32]));
        assert_eq!(text["old_text"], serde_json::json!([3, 4]));
        assert_eq!(serde_json::from_value::<Both>(text).unwrap(), v);
        // every field read from the other form
        let swapped = serde_json::json!({
            "key": vec![1u8; 32],
            "text": [0xfb, 0xff],
            "old_key": format!("{}AgI=", "AgIC".repeat(10)),
            "old_text": "AwQ=",
        });
        assert_eq!(serde_json::from_value::<Both>(swapped).unwrap(), v);
    }

    #[test]
    fn refuses_wrong_lengths_bad_base64_and_out_of_range_numbers() {
        let good = serde_json::json!({
            "key": vec![1u8; 32], "text": "", "old_key": vec![2u8; 32], "old_text": [],
        });
        assert!(serde_json::from_value::<Both>(good.clone()).is_ok());
        for (field, bad) in [
            ("key", serde_json::json!(vec![1u8; 31])),
            ("key", serde_json::json!("AQID")),
            ("old_key", serde_json::json!(vec![1u8; 33])),
            ("text", serde_json::json!("not base64!")),
            ("text", serde_json::json!("AQ")),
            ("old_text", serde_json::json!([256])),
            ("old_text", serde_json::json!(7)),
        ] {
            let mut body = good.clone();
            body[field] = bad.clone();
            assert!(
                serde_json::from_value::<Both>(body).is_err(),
                "{field}: {bad}"
            );
        }
    }
}
