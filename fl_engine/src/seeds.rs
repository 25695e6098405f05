//! The seeds of a run's random streams. Production code (the gateway's initial model, a node's
//! training draws and its split of the records) and the simulator derive them the same way, so
//! a study and its simulation see the same streams from the same seed.

/// Independent stream ids for the random draws of one run (SplitMix64 finaliser).
pub fn stream_seed(seed: u64, a: u64, b: u64) -> u64 {
    let mut z =
        seed ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Seed of site `k`'s 80/20 train/validation split in a run with `seed` (shared by the
/// federated runs and the pooled Central baseline so both see the same rows).
pub fn split_seed(seed: u64, k: usize) -> u64 {
    stream_seed(seed, k as u64, u64::MAX)
}

/// Seed of one named subject in a run with `seed`: its bytes folded through [`stream_seed`],
/// so a subject keeps its draw whatever order the records come in and whoever else they hold
/// (a node's own patient-level split ranks its patients by it).
pub fn subject_seed(seed: u64, subject: &str) -> u64 {
    let bytes = subject.as_bytes();
    bytes.chunks(8).fold(
        stream_seed(seed, bytes.len() as u64, 0x005B_1EC7),
        |h, chunk| {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            stream_seed(h, u64::from_le_bytes(word), 1)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_seeds_depend_on_every_byte_and_the_seed() {
        let a = subject_seed(7, "patient-0001");
        assert_eq!(a, subject_seed(7, "patient-0001"));
        assert_ne!(a, subject_seed(8, "patient-0001"));
        assert_ne!(a, subject_seed(7, "patient-0002"));
        // padding of the last word does not make a shorter name collide
        assert_ne!(subject_seed(7, "ab"), subject_seed(7, "ab\0"));
    }
}
