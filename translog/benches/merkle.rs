//! Merkle log costs: append, proofs, checkpoint signing; beside the SHA-256 hash chain the
//! audit log uses today (one hash of the previous link and the entry per append).
//!
//! `cargo bench -p translog --bench merkle`

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use sha2::{Digest, Sha256};
use translog::{
    consistency_proof, hash_leaf, inclusion_proof, verify_consistency, verify_inclusion,
    Checkpoint, MemoryTree, Note, NoteSigner,
};

const SIZE: u64 = 1 << 20;

fn entry(i: u64) -> Vec<u8> {
    // About the size of an audit row's canonical form.
    format!("{{\"seq\":{i},\"actor\":\"node-17\",\"action\":\"study.round.aggregate\",\"detail\":\"{:0>120}\"}}", i)
        .into_bytes()
}

fn tree(size: u64) -> MemoryTree {
    let mut t = MemoryTree::new();
    for i in 0..size {
        t.append(&entry(i));
    }
    t
}

fn bench(c: &mut Criterion) {
    let big = tree(SIZE);
    let e = entry(7);

    c.bench_function("hash chain append (today)", |b| {
        let mut prev = [0u8; 32];
        b.iter(|| {
            let mut h = Sha256::new();
            h.update(prev);
            h.update(black_box(&e));
            prev = h.finalize().into();
        })
    });
    c.bench_function("merkle append x1000 from 2^20 leaves", |b| {
        let mut t = big.clone();
        b.iter(|| {
            for _ in 0..1000 {
                t.append(black_box(&e));
            }
        })
    });
    let root = big.root_at(SIZE).unwrap();
    c.bench_function("root at 2^20 - 1", |b| {
        b.iter(|| big.root_at(black_box(SIZE - 1)).unwrap())
    });
    c.bench_function("inclusion proof at 2^20", |b| {
        b.iter(|| inclusion_proof(&big, black_box(654_321), SIZE).unwrap())
    });
    let proof = inclusion_proof(&big, 654_321, SIZE).unwrap();
    let leaf = hash_leaf(&entry(654_321));
    c.bench_function("verify inclusion at 2^20", |b| {
        b.iter(|| verify_inclusion(654_321, SIZE, black_box(&leaf), &proof, &root).unwrap())
    });
    c.bench_function("consistency proof 700,001 -> 2^20", |b| {
        b.iter(|| consistency_proof(&big, black_box(700_001), SIZE).unwrap())
    });
    let old = big.root_at(700_001).unwrap();
    let cproof = consistency_proof(&big, 700_001, SIZE).unwrap();
    c.bench_function("verify consistency 700,001 -> 2^20", |b| {
        b.iter(|| verify_consistency(700_001, SIZE, black_box(&cproof), &old, &root).unwrap())
    });
    let signer = NoteSigner::new(
        "example.org/audit",
        ed25519_dalek::SigningKey::from_bytes(&[9; 32]),
    )
    .unwrap();
    let text = Checkpoint::new("example.org/audit", SIZE, root)
        .unwrap()
        .to_text();
    c.bench_function("sign checkpoint", |b| {
        b.iter(|| signer.sign(black_box(&text)).unwrap())
    });
    let note = signer.sign(&text).unwrap();
    let verifier = [signer.verifier()];
    c.bench_function("open and verify checkpoint", |b| {
        b.iter(|| Note::open(black_box(&note), &verifier).unwrap())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
