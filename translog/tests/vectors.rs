//! Published test vectors for the Merkle tree, its proofs and signed notes.
//!
//! Merkle vectors: `proof/verify_test.go` of github.com/transparency-dev/merkle at commit
//! 02194e9afb6c1d95b5381350007963aa70fff472 (variables `leaves`, `roots`, `inclusionProofs`,
//! `consistencyProofs`), the RFC 6962 reference tree of eight leaves that the Certificate
//! Transparency implementations share. Note vectors: `sumdb/note/note_test.go` of
//! golang.org/x/mod at commit 02c991387e35f9e4c0a9b7ce137717055f8d716d (`TestSign`,
//! `TestOpen`, `TestNewVerifier`).

use translog::{
    consistency_proof, hash_children, hash_leaf, inclusion_proof, verify_consistency,
    verify_inclusion, Checkpoint, Error, Hash, MemoryTree, Note, NoteSigner, NoteVerifier,
};

fn h(s: &str) -> Hash {
    hex::decode(s).unwrap().try_into().unwrap()
}

/// Leaf data of the reference tree (`leaves` in verify_test.go).
fn leaves() -> Vec<Vec<u8>> {
    [
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    ]
    .iter()
    .map(|s| hex::decode(s).unwrap())
    .collect()
}

/// Roots of the trees of sizes 1..=8 (`roots` in verify_test.go).
fn roots() -> Vec<Hash> {
    [
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    ]
    .iter()
    .map(|s| h(s))
    .collect()
}

fn reference_tree() -> MemoryTree {
    let mut t = MemoryTree::new();
    for l in leaves() {
        t.append(&l);
    }
    t
}

#[test]
fn roots_of_the_reference_tree_match_every_prefix() {
    let t = reference_tree();
    for (i, want) in roots().iter().enumerate() {
        assert_eq!(&t.root_at(i as u64 + 1).unwrap(), want, "size {}", i + 1);
    }
}

#[test]
fn small_trees_follow_the_rfc_definition_by_hand() {
    // MTH(D[3]) = H(0x01 || H(0x01 || L0 || L1) || L2): the split at k = 2.
    let l: Vec<Hash> = leaves().iter().map(|d| hash_leaf(d)).collect();
    let three = hash_children(&hash_children(&l[0], &l[1]), &l[2]);
    assert_eq!(three, roots()[2]);
    // MTH(D[5]) = H(MTH(D[0:4]) || L4): the split at k = 4.
    let four = hash_children(&hash_children(&l[0], &l[1]), &hash_children(&l[2], &l[3]));
    assert_eq!(four, roots()[3]);
    assert_eq!(hash_children(&four, &l[4]), roots()[4]);
}

#[test]
fn published_inclusion_proofs_are_generated_and_verify() {
    // (leaf index, tree size, proof): `inclusionProofs` entries 2-5 (1-based leaf there).
    let cases: Vec<(u64, u64, Vec<Hash>)> = vec![
        (
            0,
            8,
            vec![
                h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
                h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
                h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
            ],
        ),
        (
            5,
            8,
            vec![
                h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
                h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
                h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
            ],
        ),
        (
            2,
            3,
            vec![h(
                "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
            )],
        ),
        (
            1,
            5,
            vec![
                h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
                h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
                h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
            ],
        ),
    ];
    let t = reference_tree();
    let leaves = leaves();
    for (index, size, proof) in cases {
        assert_eq!(
            inclusion_proof(&t, index, size).unwrap(),
            proof,
            "leaf {index} of {size}"
        );
        let leaf = hash_leaf(&leaves[index as usize]);
        let root = roots()[size as usize - 1];
        verify_inclusion(index, size, &leaf, &proof, &root).unwrap();
        // The probes of verify_test.go's corruptInclusionProof must all fail.
        for (i, s, l, p, r) in corrupt_inclusion(index, size, leaf, &proof, root) {
            assert!(
                verify_inclusion(i, s, &l, &p, &r).is_err(),
                "{index}/{size} probe"
            );
        }
    }
}

type InclusionProbe = (u64, u64, Hash, Vec<Hash>, Hash);

fn corrupt_inclusion(i: u64, s: u64, leaf: Hash, p: &[Hash], root: Hash) -> Vec<InclusionProbe> {
    let some = h("abacaba000000000000000000000000000000000000000000060061e00123456");
    let mut v: Vec<InclusionProbe> = vec![
        (i.wrapping_sub(1), s, leaf, p.to_vec(), root),
        (i + 1, s, leaf, p.to_vec(), root),
        (i ^ 2, s, leaf, p.to_vec(), root),
        (i, s * 2, leaf, p.to_vec(), root),
        (i, s / 2, leaf, p.to_vec(), root),
        (i, s, hash_leaf(b"WrongLeaf"), p.to_vec(), root),
        (i, s, leaf, p.to_vec(), translog::empty_root()),
        (i, s, leaf, p.to_vec(), some),
        (i, s, leaf, [p, &[root]].concat(), root),
        (i, s, leaf, [&[root], p].concat(), root),
    ];
    for k in 0..p.len() {
        let mut w = p.to_vec();
        w[k][0] ^= 8;
        v.push((i, s, leaf, w, root));
    }
    if !p.is_empty() {
        v.push((i, s, leaf, p[..p.len() - 1].to_vec(), root));
    }
    if p.len() > 1 {
        v.push((i, s, leaf, [&[p[0], some], &p[1..]].concat(), root));
    }
    v
}

#[test]
fn published_consistency_proofs_are_generated_and_verify() {
    // `consistencyProofs` of verify_test.go.
    let cases: Vec<(u64, u64, Vec<Hash>)> = vec![
        (1, 1, vec![]),
        (
            1,
            8,
            vec![
                h("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"),
                h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
                h("6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
            ],
        ),
        (
            6,
            8,
            vec![
                h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
                h("ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"),
                h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
            ],
        ),
        (
            2,
            5,
            vec![
                h("5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"),
                h("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"),
            ],
        ),
        (
            6,
            7,
            vec![
                h("0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"),
                h("b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f"),
                h("d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
            ],
        ),
    ];
    let t = reference_tree();
    let roots = roots();
    for (m, n, proof) in cases {
        assert_eq!(consistency_proof(&t, m, n).unwrap(), proof, "{m} -> {n}");
        let (r1, r2) = (roots[m as usize - 1], roots[n as usize - 1]);
        verify_consistency(m, n, &proof, &r1, &r2).unwrap();
        if proof.is_empty() {
            continue;
        }
        // verify_test.go's corruptConsistencyProof probes.
        let wrong = hash_leaf(b"WrongRoot");
        let mut probes: Vec<(u64, u64, Hash, Hash, Vec<Hash>)> = vec![
            (m - 1, n, r1, r2, proof.clone()),
            (m + 1, n, r1, r2, proof.clone()),
            (m ^ 2, n, r1, r2, proof.clone()),
            (m, n * 2, r1, r2, proof.clone()),
            (m, n / 2, r1, r2, proof.clone()),
            (m, n, wrong, r2, proof.clone()),
            (m, n, r1, wrong, proof.clone()),
            (m, n, r2, r1, proof.clone()),
            (m, n, r1, r2, vec![]),
            (m, n, r1, r2, [&proof[..], &[r1]].concat()),
            (m, n, r1, r2, [&proof[..], &[r2]].concat()),
            (m, n, r1, r2, [&[r1], &proof[..]].concat()),
            (m, n, r1, r2, [&[r2], &proof[..]].concat()),
            (m, n, r1, r2, [&[proof[0]], &proof[..]].concat()),
            (m, n, r1, r2, proof[..proof.len() - 1].to_vec()),
        ];
        for k in 0..proof.len() {
            let mut w = proof.clone();
            w[k][0] ^= 16;
            probes.push((m, n, r1, r2, w));
        }
        for (a, b, x, y, p) in probes {
            assert!(
                verify_consistency(a, b, &p, &x, &y).is_err(),
                "{m}->{n} probe {a}->{b}"
            );
        }
    }
}

#[test]
fn edge_cases_of_consistency_match_the_reference_verifier() {
    // TestVerifyConsistency's table in verify_test.go.
    let (r1, r2) = (hash_leaf(b"don't care 1"), hash_leaf(b"don't care 2"));
    let e = translog::empty_root();
    assert!(verify_consistency(0, 0, &[], &r1, &r2).is_err());
    assert!(verify_consistency(1, 1, &[], &r1, &r2).is_err());
    assert!(verify_consistency(0, 0, &[], &r1, &r1).is_ok());
    assert!(verify_consistency(0, 1, &[], &r1, &r2).is_ok());
    assert!(verify_consistency(1, 1, &[], &r2, &r2).is_ok());
    assert_eq!(
        verify_consistency(1, 0, &[], &r1, &r2),
        Err(Error::SizesOutOfOrder {
            first: 1,
            second: 0
        })
    );
    assert!(verify_consistency(2, 1, &[], &r1, &r2).is_err());
    assert!(verify_consistency(1, 2, &[], &r1, &r2).is_err());
    assert!(verify_consistency(0, 0, &[e], &e, &e).is_err());
    assert!(verify_consistency(0, 1, &[e], &e, &e).is_err());
    assert!(verify_consistency(1, 1, &[e], &e, &e).is_err());
}

const PETER_SIGNER: &str =
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const PETER_VERIFIER: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const ENOCH_VERIFIER: &str = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop";
const TEXT: &str = "If you think cryptography is the answer to your problem,\n\
                    then you don't know what your problem is.\n";
const PETER_SIG: &str = "\u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
const ENOCH_SIG: &str = "\u{2014} EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n";

#[test]
fn signing_reproduces_the_sumdb_note_vector_byte_for_byte() {
    let signer = NoteSigner::from_key_string(PETER_SIGNER).unwrap();
    assert_eq!(signer.key_id(), 0xc74f20a3);
    assert_eq!(signer.verifier().to_key_string(), PETER_VERIFIER);
    assert_eq!(signer.to_key_string(), PETER_SIGNER);
    assert_eq!(signer.sign(TEXT).unwrap(), format!("{TEXT}\n{PETER_SIG}"));
}

#[test]
fn opening_the_sumdb_note_vector_verifies_known_keys_and_sets_aside_unknown_ones() {
    let peter = NoteVerifier::from_key_string(PETER_VERIFIER).unwrap();
    let enoch = NoteVerifier::from_key_string(ENOCH_VERIFIER).unwrap();
    let msg = format!("{TEXT}\n{PETER_SIG}{ENOCH_SIG}");

    let one = Note::open(&msg, std::slice::from_ref(&peter)).unwrap();
    assert_eq!(one.text, TEXT);
    assert_eq!(one.verified.len(), 1);
    assert_eq!(one.unverified.len(), 1);
    assert_eq!(one.unverified[0].name, "EnochRoot");

    let both = Note::open(&msg, &[peter.clone(), enoch.clone()]).unwrap();
    assert_eq!(both.verified.len(), 2);

    assert_eq!(Note::open(&msg, &[]), Err(Error::UnverifiedNote));
    assert!(matches!(
        Note::open(
            &format!("{TEXT}\n{ENOCH_SIG}"),
            &[enoch.clone(), peter.clone(), enoch]
        ),
        Err(Error::AmbiguousKey { .. })
    ));
    // TestOpen's "invalid signature": four characters spliced into the signature.
    let bad = format!("{TEXT}\n{}ABCD{}", &PETER_SIG[..60], &PETER_SIG[60..]);
    assert!(matches!(
        Note::open(&bad, &[peter]),
        Err(Error::InvalidSignature { .. })
    ));
}

#[test]
fn malformed_notes_and_keys_are_refused() {
    let peter = NoteVerifier::from_key_string(PETER_VERIFIER).unwrap();
    // TestOpen's badMsgs.
    let bad = [
        TEXT.to_owned(),
        format!("{TEXT}\n"),
        format!("{TEXT}\n{}", &PETER_SIG[..PETER_SIG.len() - 1]),
        format!("\x01{TEXT}\n{PETER_SIG}"),
        format!("{TEXT}\n\u{2014} Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="),
        format!("{TEXT}\n{PETER_SIG}Unexpected line.\n"),
    ];
    for msg in bad {
        assert!(
            Note::open(&msg, std::slice::from_ref(&peter)).is_err(),
            "{msg:?}"
        );
    }
    // TestNewVerifier's manglings: every proper substring and every single-byte change.
    let b = PETER_VERIFIER.as_bytes();
    for i in 0..=b.len() {
        for j in i + 1..=b.len() {
            if i != 0 || j != b.len() {
                let s = std::str::from_utf8(&b[i..j]).unwrap();
                assert!(NoteVerifier::from_key_string(s).is_err(), "{s}");
            }
        }
    }
    for i in 0..b.len() {
        let mut m = b.to_vec();
        m[i] += 1;
        let s = String::from_utf8(m).unwrap();
        assert!(NoteVerifier::from_key_string(&s).is_err(), "{s}");
    }
}

#[test]
fn a_signed_checkpoint_round_trips_and_proves_its_tree() {
    let key = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
    let signer = NoteSigner::new("example.org/audit", key).unwrap();
    let t = reference_tree();
    let cp = Checkpoint::new("example.org/audit", 8, t.root()).unwrap();
    let signed = signer.sign(&cp.to_text()).unwrap();
    assert!(signed
        .starts_with("example.org/audit\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=\n\n"));
    let opened = Note::open(&signed, &[signer.verifier()]).unwrap();
    assert_eq!(Checkpoint::parse(&opened.text).unwrap(), cp);
    // A checkpoint edited after signing (size 9 for 8) fails, whatever the edit.
    let forged = signed.replacen("\n8\n", "\n9\n", 1);
    assert!(matches!(
        Note::open(&forged, &[signer.verifier()]),
        Err(Error::InvalidSignature { .. })
    ));
}

#[test]
fn checkpoint_text_follows_the_c2sp_rules() {
    // The example of c2sp.org/tlog-checkpoint.
    let text =
        "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
    let cp = Checkpoint::parse(text).unwrap();
    assert_eq!(cp.size, 20852163);
    assert_eq!(cp.to_text(), text);
    let bad = [
        "\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
        "o\n01\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
        "o\n-1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
        "o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I\n",
        "o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=",
        "o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n",
        "o\n1\n",
    ];
    for t in bad {
        assert!(Checkpoint::parse(t).is_err(), "{t:?}");
    }
}
