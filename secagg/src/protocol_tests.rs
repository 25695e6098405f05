//! Whole rounds between real clients and a server, with dropouts at every stage, misrouted,
//! replayed and tampered messages, and a look at everything the server keeps.

use std::collections::BTreeSet;

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

use crate::client::Client;
use crate::config::{ClientId, RoundConfig, SessionId};
use crate::error::{Error, Round};
use crate::messages::*;
use crate::server::{Aggregate, Server};
use crate::sum::MaskedSum;

fn config(n: u32, t: u32, k: u32, len: usize) -> RoundConfig {
    RoundConfig {
        session: SessionId([7; 32]),
        clients: n,
        threshold: t,
        degree: k,
        graph_seed: [3; 32],
        vector_len: len,
        modulus_bits: 32,
    }
}

fn clients(cfg: &RoundConfig) -> Vec<Client> {
    (1..=cfg.clients)
        .map(|i| {
            Client::new(
                cfg.clone(),
                ClientId(i),
                ChaCha20Rng::seed_from_u64(1000 + i as u64),
            )
            .unwrap()
        })
        .collect()
}

fn inputs(cfg: &RoundConfig) -> Vec<Vec<u64>> {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    (0..cfg.clients)
        .map(|_| {
            (0..cfg.vector_len)
                .map(|_| rng.next_u64() & cfg.ring_mask())
                .collect()
        })
        .collect()
}

fn sum_of(cfg: &RoundConfig, inputs: &[Vec<u64>], who: &[ClientId]) -> Vec<u64> {
    let mut s = vec![0u64; cfg.vector_len];
    for id in who {
        for (a, x) in s.iter_mut().zip(&inputs[id.0 as usize - 1]) {
            *a = a.wrapping_add(*x) & cfg.ring_mask();
        }
    }
    s
}

/// Nodes that go silent after the given stage: 0 = never advertise, 1 = advertise only,
/// 2 = stop after ShareKeys, 3 = stop after sending the input (no unmasking).
#[derive(Default, Clone)]
struct Drops(Vec<(u32, u8)>);

impl Drops {
    fn active(&self, id: ClientId, stage: u8) -> bool {
        !self.0.iter().any(|(c, s)| *c == id.0 && *s < stage)
    }
}

fn run(cfg: &RoundConfig, drops: &Drops) -> Result<Aggregate, Error> {
    let mut cs = clients(cfg);
    let xs = inputs(cfg);
    let mut server = Server::new(cfg.clone())?;
    let mut sum = MaskedSum::zero(cfg);
    for c in cs.iter_mut().filter(|c| drops.active(c.id(), 1)) {
        server.receive_advertise(c.advertise_keys()?)?;
    }
    // the relay waits exactly for the nodes admitted to the stage that have not answered
    let silent = |admitted: Vec<ClientId>, stage: u8| -> BTreeSet<ClientId> {
        admitted
            .into_iter()
            .filter(|c| !drops.active(*c, stage))
            .collect()
    };
    assert_eq!(
        server.awaiting(),
        silent((1..=cfg.clients).map(ClientId).collect(), 1)
    );
    let keys = server.close_advertise()?;
    let admitted: Vec<ClientId> = keys.iter().map(|m| m.to).collect();
    // what the relay keeps beside the server's state until the stage closes
    let mut shared = Vec::new();
    for m in keys {
        let c = &mut cs[m.to.0 as usize - 1];
        if drops.active(c.id(), 2) {
            let msg = c.share_keys(&m)?;
            server.receive_share_keys(&msg)?;
            shared.push(msg);
        }
    }
    assert_eq!(server.awaiting(), silent(admitted, 2));
    let relays = server.close_share_keys(shared)?;
    let admitted: Vec<ClientId> = relays.iter().map(|m| m.to).collect();
    for m in relays {
        let c = &mut cs[m.to.0 as usize - 1];
        if drops.active(c.id(), 3) {
            let x = &xs[c.id().0 as usize - 1];
            server.receive_masked_input(&c.masked_input(&m, x)?, &mut sum)?;
        }
    }
    assert_eq!(server.awaiting(), silent(admitted, 3));
    let reqs = server.close_masked_input()?;
    let admitted: Vec<ClientId> = reqs.iter().map(|m| m.to).collect();
    let mut answers = Vec::new();
    for m in reqs {
        let c = &mut cs[m.to.0 as usize - 1];
        if drops.active(c.id(), 4) {
            let msg = c.unmask(&m)?;
            server.receive_unmask(&msg)?;
            answers.push(msg);
        }
    }
    assert_eq!(server.awaiting(), silent(admitted, 4));
    let agg = server.finish(sum, answers)?;
    assert!(server.awaiting().is_empty());
    assert_eq!(agg.sum, sum_of(cfg, &xs, &agg.contributors), "unmasked sum");
    Ok(agg)
}

#[test]
fn complete_graph_without_dropouts_sums_exactly() {
    let cfg = config(10, 6, 9, 64);
    let agg = run(&cfg, &Drops::default()).unwrap();
    assert_eq!(agg.contributors.len(), 10);
}

#[test]
fn dropouts_at_every_stage_above_the_threshold_still_sum_the_survivors() {
    let cfg = config(12, 6, 11, 32);
    for stage in 0..=3u8 {
        let drops = Drops(vec![(2, stage), (5, stage), (11, stage)]);
        let agg = run(&cfg, &drops).unwrap_or_else(|e| panic!("stage {stage}: {e}"));
        let gone: BTreeSet<u32> = [2, 5, 11].into();
        let want: Vec<ClientId> = (1..=12)
            .filter(|i| stage == 3 || !gone.contains(i))
            .map(ClientId)
            .collect();
        assert_eq!(agg.contributors, want, "stage {stage}");
    }
    // Nodes dropping at different stages in one round.
    let drops = Drops(vec![(1, 0), (3, 1), (4, 2), (9, 3)]);
    let agg = run(&cfg, &drops).unwrap();
    assert_eq!(agg.contributors.len(), 9); // 1, 3 and 4 never sent an input
}

#[test]
fn dropouts_below_the_threshold_stop_the_round_at_that_stage() {
    let cfg = config(8, 5, 7, 8);
    let many = |stage| Drops((1..=4).map(|c| (c, stage)).collect());
    assert_eq!(
        run(&cfg, &many(0)).unwrap_err(),
        Error::TooFewSurvivors {
            round: Round::AdvertiseKeys,
            have: 0,
            need: 5
        },
        "4 of 8 advertise: each has 3 live neighbours, fewer than t = 5, so all are pruned"
    );
    assert!(matches!(
        run(&cfg, &many(1)),
        Err(Error::TooFewSurvivors {
            round: Round::ShareKeys,
            ..
        })
    ));
    assert!(matches!(
        run(&cfg, &many(2)),
        Err(Error::TooFewSurvivors {
            round: Round::MaskedInputCollection,
            ..
        })
    ));
    assert!(matches!(
        run(&cfg, &many(3)),
        Err(Error::TooFewSurvivors {
            round: Round::Unmasking,
            ..
        })
    ));
}

#[test]
fn sparse_secagg_plus_graph_sums_with_dropouts() {
    // 40 nodes, 8 neighbours each, threshold 5.
    let cfg = config(40, 5, 8, 16);
    run(&cfg, &Drops::default()).unwrap();
    let drops = Drops(vec![(3, 1), (17, 2), (18, 2), (30, 3), (31, 3), (40, 0)]);
    let agg = run(&cfg, &drops).unwrap();
    assert_eq!(agg.contributors.len(), 36);
}

#[test]
fn too_few_unmasking_shares_for_one_node_is_named() {
    // Complete graph of 5, t = 3. Nodes 1 and 2 send their inputs, then vanish before
    // Unmasking: three responders remain (enough overall), but node 3's self mask was shared
    // with 1, 2, 4 and 5, so only 2 of its shares come back.
    let cfg = config(5, 3, 4, 4);
    let agg = run(&cfg, &Drops(vec![(1, 3)])).unwrap();
    assert_eq!(agg.contributors.len(), 5);
    assert_eq!(
        run(&cfg, &Drops(vec![(1, 3), (2, 3)])).unwrap_err(),
        Error::TooFewShares {
            owner: ClientId(3),
            have: 2,
            need: 3
        }
    );
    assert!(matches!(
        run(&cfg, &Drops(vec![(1, 3), (2, 3), (3, 3)])),
        Err(Error::TooFewSurvivors {
            round: Round::Unmasking,
            ..
        })
    ));
}

struct Setup {
    cfg: RoundConfig,
    cs: Vec<Client>,
    server: Server,
    keys: Vec<KeysBroadcast>,
}

fn after_advertise(n: u32, t: u32) -> Setup {
    let cfg = config(n, t, n - 1, 4);
    let mut cs = clients(&cfg);
    let mut server = Server::new(cfg.clone()).unwrap();
    for c in cs.iter_mut() {
        server
            .receive_advertise(c.advertise_keys().unwrap())
            .unwrap();
    }
    let keys = server.close_advertise().unwrap();
    Setup {
        cfg,
        cs,
        server,
        keys,
    }
}

/// Every node's ShareKeys for its broadcast, each accepted by the server and kept, as a relay
/// keeps them beside the server's state until the stage closes.
fn share_all(server: &mut Server, cs: &mut [Client], keys: &[KeysBroadcast]) -> Vec<ShareKeys> {
    keys.iter()
        .map(|m| {
            let msg = cs[m.to.0 as usize - 1].share_keys(m).unwrap();
            server.receive_share_keys(&msg).unwrap();
            msg
        })
        .collect()
}

/// Every asked node's Unmasking answer, each accepted by the server and kept.
fn unmask_all(
    server: &mut Server,
    cs: &mut [Client],
    requests: &[UnmaskRequest],
) -> Vec<UnmaskResponse> {
    requests
        .iter()
        .map(|m| {
            let msg = cs[m.to.0 as usize - 1].unmask(m).unwrap();
            server.receive_unmask(&msg).unwrap();
            msg
        })
        .collect()
}

#[test]
fn server_refuses_wrong_session_round_replay_duplicate_and_strangers() {
    let cfg = config(5, 3, 4, 4);
    let mut cs = clients(&cfg);
    let mut server = Server::new(cfg.clone()).unwrap();
    let adv = cs[0].advertise_keys().unwrap();
    server.receive_advertise(adv.clone()).unwrap();
    assert_eq!(
        server.receive_advertise(adv.clone()),
        Err(Error::Replayed {
            client: ClientId(1),
            round: Round::AdvertiseKeys
        })
    );
    let mut other = adv.clone();
    other.cipher_pk[0] ^= 1;
    other.mask_pk[0] ^= 1;
    assert_eq!(
        server.receive_advertise(other),
        Err(Error::Duplicate {
            client: ClientId(1),
            round: Round::AdvertiseKeys
        })
    );
    let adv2 = cs[1].advertise_keys().unwrap();
    let mut foreign = adv2.clone();
    foreign.session = SessionId([8; 32]);
    assert_eq!(
        server.receive_advertise(foreign.clone()),
        Err(Error::WrongSession)
    );
    let mut stranger = foreign.clone();
    stranger.session = cfg.session;
    stranger.from = ClientId(6);
    assert_eq!(
        server.receive_advertise(stranger),
        Err(Error::UnknownClient(ClientId(6)))
    );
    let mut copycat = foreign;
    copycat.session = cfg.session;
    copycat.mask_pk = adv.mask_pk;
    assert_eq!(server.receive_advertise(copycat), Err(Error::ReusedKey));
    // A message for a later round is refused before the round opens.
    let early = MaskedInput {
        session: cfg.session,
        from: ClientId(1),
        masked: vec![0; 4],
    };
    assert_eq!(
        server.receive_masked_input(&early, &mut MaskedSum::zero(&cfg)),
        Err(Error::WrongRound {
            expected: Round::AdvertiseKeys,
            got: Round::MaskedInputCollection
        })
    );
    // None of the refusals changed anything: the round goes on and closes with 4 nodes.
    server.receive_advertise(adv2).unwrap();
    for c in cs.iter_mut().skip(2).take(2) {
        server
            .receive_advertise(c.advertise_keys().unwrap())
            .unwrap();
    }
    assert_eq!(server.close_advertise().unwrap().len(), 4);
    // Node 5 never advertised: it may not take part later.
    let late = ShareKeys {
        session: cfg.session,
        from: ClientId(5),
        shares: vec![],
    };
    assert_eq!(
        server.receive_share_keys(&late),
        Err(Error::UnexpectedClient {
            client: ClientId(5),
            round: Round::ShareKeys
        })
    );
}

#[test]
fn clients_refuse_misrouted_replayed_and_out_of_order_messages() {
    let Setup {
        cfg, mut cs, keys, ..
    } = after_advertise(5, 3);
    let for_2 = keys.iter().find(|m| m.to == ClientId(2)).unwrap().clone();
    // Node 1 is handed node 2's broadcast.
    assert_eq!(
        cs[0].share_keys(&for_2),
        Err(Error::WrongRecipient {
            expected: ClientId(1),
            got: ClientId(2)
        })
    );
    let mut foreign = for_2.clone();
    foreign.session = SessionId([1; 32]);
    assert_eq!(cs[1].share_keys(&foreign), Err(Error::WrongSession));
    // An unmask request before its time.
    let early = UnmaskRequest {
        session: cfg.session,
        to: ClientId(2),
        survivors: vec![],
    };
    assert_eq!(
        cs[1].unmask(&early),
        Err(Error::WrongRound {
            expected: Round::ShareKeys,
            got: Round::Unmasking
        })
    );
    // None of that hurt node 2; the genuine message goes through once, then is a replay.
    assert!(!cs[1].is_aborted());
    cs[1].share_keys(&for_2).unwrap();
    assert_eq!(
        cs[1].share_keys(&for_2),
        Err(Error::Replayed {
            client: ClientId(2),
            round: Round::ShareKeys
        })
    );
    assert!(!cs[1].is_aborted());
    // A relay that lists one neighbour twice is inconsistent, not a routing slip: node 3 aborts.
    let mut doubled = keys.iter().find(|m| m.to == ClientId(3)).unwrap().clone();
    doubled.peers.push(doubled.peers[0].clone());
    assert!(matches!(
        cs[2].share_keys(&doubled),
        Err(Error::BadRelay(_))
    ));
    assert!(cs[2].is_aborted());
}

#[test]
fn a_peer_outside_the_graph_or_a_tampered_share_aborts_the_client() {
    // Sparse graph: 12 nodes, degree 4.
    let cfg = config(12, 3, 4, 4);
    let mut cs = clients(&cfg);
    let mut server = Server::new(cfg.clone()).unwrap();
    for c in cs.iter_mut() {
        server
            .receive_advertise(c.advertise_keys().unwrap())
            .unwrap();
    }
    let mut keys = server.close_advertise().unwrap();
    let graph = crate::graph::Graph::new(&cfg);
    // The relay slips a non-neighbour's key into node 1's list.
    let stranger = (2..=12)
        .map(ClientId)
        .find(|v| !graph.are_neighbours(ClientId(1), *v))
        .unwrap();
    let stranger_keys = keys[stranger.0 as usize - 1].peers[0].clone();
    let mut forged = keys[0].clone();
    forged.peers.push(PeerKeys {
        id: stranger,
        ..stranger_keys
    });
    assert_eq!(
        cs[0].share_keys(&forged),
        Err(Error::NotNeighbour {
            from: stranger,
            to: ClientId(1)
        })
    );
    assert!(cs[0].is_aborted());
    assert_eq!(
        cs[0].share_keys(&keys[0]),
        Err(Error::Duplicate {
            client: ClientId(1),
            round: Round::ShareKeys
        })
    );

    // The others carry on; a flipped bit in one relayed ciphertext is caught by the AEAD.
    let mut shared = Vec::new();
    for (i, m) in keys.drain(1..).enumerate() {
        let c = &mut cs[m.to.0 as usize - 1];
        let shares = c.share_keys(&m).unwrap();
        if i == 0 {
            // a share addressed to a node off the sender's neighbourhood: refused by name,
            // nothing recorded, the true message still accepted
            let off = (1..=12)
                .map(ClientId)
                .find(|v| *v != m.to && !graph.are_neighbours(m.to, *v))
                .unwrap();
            let mut stray = shares.clone();
            stray.shares[0].peer = off;
            assert_eq!(
                server.receive_share_keys(&stray),
                Err(Error::NotNeighbour {
                    from: m.to,
                    to: off
                })
            );
        }
        server.receive_share_keys(&shares).unwrap();
        shared.push(shares);
    }
    let relays = server.close_share_keys(shared).unwrap();
    let mut bad = relays[0].clone();
    bad.shares[0].ciphertext[10] ^= 1;
    let from = bad.shares[0].peer;
    let id = bad.to;
    let c = &mut cs[id.0 as usize - 1];
    assert_eq!(
        c.masked_input(&bad, &[0; 4]),
        Err(Error::Decryption { from })
    );
    assert!(c.is_aborted());
    // A ciphertext moved to another recipient does not decrypt either (bound to both ids).
    let mut moved = relays[1].clone();
    let donor = relays[2]
        .shares
        .iter()
        .find(|s| s.peer != moved.to)
        .unwrap()
        .clone();
    moved.shares[0] = EncryptedShare {
        peer: donor.peer,
        ciphertext: donor.ciphertext,
    };
    let c = &mut cs[moved.to.0 as usize - 1];
    assert!(matches!(
        c.masked_input(&moved, &[0; 4]),
        Err(Error::Decryption { .. } | Error::BadRelay(_))
    ));
}

#[test]
fn inputs_outside_the_ring_or_of_the_wrong_length_are_refused_without_aborting() {
    let Setup {
        cfg,
        mut cs,
        mut server,
        keys,
    } = after_advertise(4, 3);
    let shared = share_all(&mut server, &mut cs, &keys);
    let relays = server.close_share_keys(shared).unwrap();
    let c = &mut cs[0];
    assert_eq!(
        c.masked_input(&relays[0], &[0; 3]),
        Err(Error::VectorLength {
            expected: 4,
            got: 3
        })
    );
    assert_eq!(
        c.masked_input(&relays[0], &[0, 1 << 40, 0, 0]),
        Err(Error::OutOfRing { index: 1, bits: 32 })
    );
    assert!(!c.is_aborted());
    let m = c.masked_input(&relays[0], &[1, 2, 3, 4]).unwrap();
    let mut wrong = m.clone();
    wrong.masked.push(0);
    wrong.from = ClientId(2);
    let mut sum = MaskedSum::zero(&cfg);
    assert_eq!(
        server.receive_masked_input(&wrong, &mut sum),
        Err(Error::VectorLength {
            expected: 4,
            got: 5
        })
    );
    server.receive_masked_input(&m, &mut sum).unwrap();
    assert_eq!(
        server.receive_masked_input(&m, &mut sum),
        Err(Error::Replayed {
            client: ClientId(1),
            round: Round::MaskedInputCollection
        })
    );
    assert_eq!(cfg.vector_len, 4);
    // A sum of another length (a stored sum that does not belong to the session) is refused.
    let other = cs[1].masked_input(&relays[1], &[1, 2, 3, 4]).unwrap();
    let short = MaskedSum::zero(&config(5, 3, 4, 3));
    assert!(matches!(
        server.receive_masked_input(&other, &mut short.clone()),
        Err(Error::BadSum(_))
    ));
    server.receive_masked_input(&other, &mut sum).unwrap();
}

#[test]
fn an_altered_revealed_share_is_detected() {
    // 6 nodes, complete graph, t = 3: each survivor's self mask has 5 shares, so two
    // different subsets are interpolated and must agree.
    let cfg = config(6, 3, 5, 4);
    let mut cs = clients(&cfg);
    let xs = inputs(&cfg);
    let mut server = Server::new(cfg.clone()).unwrap();
    let mut sum = MaskedSum::zero(&cfg);
    for c in cs.iter_mut() {
        server
            .receive_advertise(c.advertise_keys().unwrap())
            .unwrap();
    }
    let keys = server.close_advertise().unwrap();
    let shared = share_all(&mut server, &mut cs, &keys);
    for m in server.close_share_keys(shared).unwrap() {
        let c = &mut cs[m.to.0 as usize - 1];
        server
            .receive_masked_input(
                &c.masked_input(&m, &xs[m.to.0 as usize - 1]).unwrap(),
                &mut sum,
            )
            .unwrap();
    }
    let mut answers = Vec::new();
    for m in server.close_masked_input().unwrap() {
        let c = &mut cs[m.to.0 as usize - 1];
        let mut r = c.unmask(&m).unwrap();
        if r.from == ClientId(6) {
            r.self_mask_shares[0].share[31] ^= 1; // a malicious holder lies about node 1
        }
        server.receive_unmask(&r).unwrap();
        answers.push(r);
    }
    assert!(matches!(
        server.finish(sum, answers),
        Err(Error::InconsistentShares { .. })
    ));
}

/// Every byte string in `v`: the arrays of numbers, and the strings that decode as base64.
fn byte_strings(v: &serde_json::Value, out: &mut Vec<Vec<u64>>) {
    use base64::{engine::general_purpose::STANDARD, Engine};
    match v {
        serde_json::Value::Array(a) => {
            if !a.is_empty() && a.iter().all(|x| x.is_u64()) {
                out.push(a.iter().map(|x| x.as_u64().unwrap()).collect());
            }
            a.iter().for_each(|x| byte_strings(x, out));
        }
        serde_json::Value::Object(m) => m.values().for_each(|x| byte_strings(x, out)),
        serde_json::Value::String(s) => {
            if let Ok(bytes) = STANDARD.decode(s) {
                out.push(bytes.into_iter().map(u64::from).collect());
            }
        }
        _ => {}
    }
}

/// What a relay stores: the server's serialised state, and beside it the running sum (here as
/// a plain array of numbers under `masked_sum`, so that the scans below see every number) and
/// the messages it keeps for the stage's close.
fn stored(server: &Server, sum: &MaskedSum, kept: serde_json::Value) -> serde_json::Value {
    let state = serde_json::to_value(server).unwrap();
    assert!(state.get("masked_sum").is_none(), "the sum is kept apart");
    serde_json::json!({"state": state, "masked_sum": sum.words(), "kept": kept})
}

fn contains_window(hay: &[u64], needle: &[u64]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_server_state_never_holds_an_input_a_secret_or_a_plain_share() {
    let cfg = config(6, 4, 5, 16);
    let mut cs = clients(&cfg);
    let xs = inputs(&cfg);
    let mut server = Server::new(cfg.clone()).unwrap();
    let mut sum = MaskedSum::zero(&cfg);
    let mut snapshots = Vec::new();
    let mut snap =
        |s: &Server, sum: &MaskedSum, kept: serde_json::Value| snapshots.push(stored(s, sum, kept));
    let none = serde_json::json!([]);

    for c in cs.iter_mut() {
        server
            .receive_advertise(c.advertise_keys().unwrap())
            .unwrap();
    }
    snap(&server, &sum, none.clone());
    let keys = server.close_advertise().unwrap();
    let shared = share_all(&mut server, &mut cs, &keys);
    snap(&server, &sum, serde_json::to_value(&shared).unwrap());
    let relays = server.close_share_keys(shared).unwrap();
    // Node 6 drops after ShareKeys: its mask key gets rebuilt, its self mask never.
    for m in relays.iter().filter(|m| m.to != ClientId(6)) {
        let c = &mut cs[m.to.0 as usize - 1];
        server
            .receive_masked_input(
                &c.masked_input(m, &xs[m.to.0 as usize - 1]).unwrap(),
                &mut sum,
            )
            .unwrap();
        snap(&server, &sum, none.clone());
    }
    let requests = server.close_masked_input().unwrap();
    let answers = unmask_all(&mut server, &mut cs, &requests);
    snap(&server, &sum, serde_json::to_value(&answers).unwrap());

    // What the nodes hold secret: their inputs, their key material and the plain shares.
    let mut secrets: Vec<Vec<u64>> = Vec::new();
    for c in &cs {
        secrets.extend(
            c.secrets_for_tests()
                .into_iter()
                .map(|b| b.iter().map(|&x| x as u64).collect()),
        );
    }
    let shares: Vec<Vec<u64>> = relays
        .iter()
        .flat_map(|r| {
            r.shares
                .iter()
                .map(|s| s.ciphertext.iter().map(|&b| b as u64).collect::<Vec<_>>())
        })
        .collect();
    let ciphertext_in = |v: &serde_json::Value| {
        let mut strings = Vec::new();
        byte_strings(v, &mut strings);
        strings.iter().any(|a| shares.iter().any(|s| a == s))
    };
    for (i, snapshot) in snapshots.iter().enumerate() {
        let mut strings = Vec::new();
        byte_strings(snapshot, &mut strings);
        // the scan sees the keys, whichever form they are written in
        assert!(strings.iter().any(|a| a.len() == 32), "snapshot {i}");
        for a in &strings {
            for x in &xs {
                assert!(!contains_window(a, x), "snapshot {i} holds an input vector");
            }
            for s in &secrets {
                assert!(!contains_window(a, s), "snapshot {i} holds a node's secret");
            }
        }
        // Ciphertexts only while they wait for relay (snapshot 1), never afterwards, and never
        // in the state that every message reads.
        assert_eq!(ciphertext_in(snapshot), i == 1, "snapshot {i}");
        assert!(!ciphertext_in(&snapshot["state"]), "snapshot {i}");
        let keys: BTreeSet<&str> = snapshot["state"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let allowed: BTreeSet<&str> = [
            "config", "round", "keys", "u1", "u2", "partners", "u3", "seen",
        ]
        .into();
        assert_eq!(keys, allowed, "the server keeps nothing else");
    }
    // With one input in, the running sum is that input plus masks: it differs in (nearly)
    // every entry, because the masks are uniform in the ring.
    let first = &snapshots[2]["masked_sum"];
    let first: Vec<u64> = first
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let own = &xs[relays[0].to.0 as usize - 1];
    let same = first.iter().zip(own).filter(|(a, b)| a == b).count();
    assert!(
        same <= 1,
        "{same} entries of a single masked input equal the input"
    );
    let agg = server.finish(sum, answers).unwrap();
    assert_eq!(agg.sum, sum_of(&cfg, &xs, &agg.contributors));
}

#[test]
fn server_state_survives_a_serde_round_trip_mid_protocol() {
    let Setup {
        cfg,
        mut cs,
        server,
        keys,
    } = after_advertise(5, 3);
    let json = serde_json::to_string(&server).unwrap();
    let mut server: Server = serde_json::from_str(&json).unwrap();
    let xs = inputs(&cfg);
    let mut shared = Vec::new();
    for m in &keys {
        // Messages cross the relay as JSON too, and the relay keeps them as JSON.
        let m: KeysBroadcast = serde_json::from_str(&serde_json::to_string(m).unwrap()).unwrap();
        let c = &mut cs[m.to.0 as usize - 1];
        let msg = c.share_keys(&m).unwrap();
        let msg: ShareKeys = serde_json::from_str(&serde_json::to_string(&msg).unwrap()).unwrap();
        server.receive_share_keys(&msg).unwrap();
        shared.push(serde_json::to_string(&msg).unwrap());
    }
    let mut server: Server =
        serde_json::from_str(&serde_json::to_string(&server).unwrap()).unwrap();
    let shared = shared.iter().map(|m| serde_json::from_str(m).unwrap());
    let mut sum = MaskedSum::zero(&cfg);
    for m in server.close_share_keys(shared).unwrap() {
        let m: SharesRelay = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        let c = &mut cs[m.to.0 as usize - 1];
        let msg = c.masked_input(&m, &xs[m.to.0 as usize - 1]).unwrap();
        let msg: MaskedInput = serde_json::from_str(&serde_json::to_string(&msg).unwrap()).unwrap();
        server.receive_masked_input(&msg, &mut sum).unwrap();
    }
    let mut server: Server =
        serde_json::from_str(&serde_json::to_string(&server).unwrap()).unwrap();
    let sum = MaskedSum::from_bytes(&cfg, &sum.to_bytes(&cfg)).unwrap();
    let mut answers = Vec::new();
    for m in server.close_masked_input().unwrap() {
        let m: UnmaskRequest = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        let msg = cs[m.to.0 as usize - 1].unmask(&m).unwrap();
        let msg: UnmaskResponse =
            serde_json::from_str(&serde_json::to_string(&msg).unwrap()).unwrap();
        server.receive_unmask(&msg).unwrap();
        answers.push(serde_json::to_string(&msg).unwrap());
    }
    let mut server: Server =
        serde_json::from_str(&serde_json::to_string(&server).unwrap()).unwrap();
    let answers = answers.iter().map(|m| serde_json::from_str(m).unwrap());
    let agg = server.finish(sum, answers).unwrap();
    assert_eq!(agg.sum, sum_of(&cfg, &xs, &agg.contributors));
}

/// State serialised while the server still kept the running sum in it (packed, or earlier as
/// a plain array) resumes: the sum is handed over once and the round finishes exactly.
#[test]
fn state_that_still_holds_the_sum_hands_it_over() {
    for packed in [true, false] {
        let Setup {
            cfg,
            mut cs,
            mut server,
            keys,
        } = after_advertise(5, 3);
        let xs = inputs(&cfg);
        let shared = share_all(&mut server, &mut cs, &keys);
        let mut sum = MaskedSum::zero(&cfg);
        for m in server.close_share_keys(shared).unwrap() {
            let c = &mut cs[m.to.0 as usize - 1];
            let msg = c.masked_input(&m, &xs[m.to.0 as usize - 1]).unwrap();
            server.receive_masked_input(&msg, &mut sum).unwrap();
        }
        let mut old = serde_json::to_value(&server).unwrap();
        old["masked_sum"] = if packed {
            #[derive(serde::Serialize)]
            struct Packed(#[serde(with = "crate::packed")] Vec<u64>);
            serde_json::to_value(Packed(sum.words().to_vec())).unwrap()
        } else {
            serde_json::json!(sum.words())
        };
        let mut server: Server = serde_json::from_value(old).unwrap();
        let carried = server.take_carried_sum().expect("the old state's sum");
        assert_eq!(carried, sum);
        assert!(server.take_carried_sum().is_none(), "handed over once");
        assert!(serde_json::to_value(&server)
            .unwrap()
            .get("masked_sum")
            .is_none());
        let requests = server.close_masked_input().unwrap();
        let answers = unmask_all(&mut server, &mut cs, &requests);
        let agg = server.finish(carried, answers).unwrap();
        assert_eq!(agg.sum, sum_of(&cfg, &xs, &agg.contributors));
    }
}

/// `v` with every byte string written as an array of numbers, as releases before base64 wrote
/// them: the named fields, and every fingerprint under `seen`.
fn as_arrays(v: &mut serde_json::Value, under_seen: bool) {
    use base64::{engine::general_purpose::STANDARD, Engine};
    const BYTES: [&str; 4] = ["cipher_pk", "mask_pk", "ciphertext", "share"];
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if let (true, serde_json::Value::String(s)) = (BYTES.contains(&k.as_str()), &*x) {
                    *x = serde_json::json!(STANDARD.decode(s).unwrap());
                } else {
                    as_arrays(x, under_seen || k == "seen");
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| as_arrays(x, under_seen)),
        serde_json::Value::String(s) if under_seen => {
            *v = serde_json::json!(STANDARD.decode(&*s).unwrap());
        }
        _ => {}
    }
}

/// State serialised while the server still kept the ShareKeys messages and the Unmasking
/// answers in it, with every byte string an array of numbers (`keys` as whole AdvertiseKeys
/// messages), resumes mid-stage: what it holds is handed over once, and the stage closes with
/// those and the messages that arrive afterwards.
#[test]
fn state_that_still_holds_the_messages_hands_them_over() {
    let Setup {
        cfg,
        mut cs,
        mut server,
        keys,
    } = after_advertise(5, 3);
    let xs = inputs(&cfg);
    let old = |server: &Server, held: &str, messages: &[serde_json::Value]| -> Server {
        let mut v = serde_json::to_value(server).unwrap();
        let mut keys = v["keys"].take();
        for (id, k) in keys.as_object_mut().unwrap() {
            k["session"] = serde_json::json!(cfg.session);
            k["from"] = serde_json::json!(id.parse::<u32>().unwrap());
        }
        v["keys"] = keys;
        let mut map = serde_json::Map::new();
        for m in messages {
            map.insert(m["from"].to_string(), m.clone());
        }
        for field in ["pending_shares", "responses"] {
            v[field] = if field == held {
                serde_json::Value::Object(map.clone())
            } else {
                serde_json::json!({})
            };
        }
        as_arrays(&mut v, false);
        serde_json::from_value(v).unwrap()
    };
    // three of five ShareKeys in the old state, two after
    let shared = share_all(&mut server, &mut cs, &keys);
    let (before, after) = shared.split_at(3);
    let held: Vec<serde_json::Value> = before
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    let mut server = old(&server, "pending_shares", &held);
    let mut kept = server.take_carried_share_keys();
    assert_eq!(kept, before, "handed over");
    assert!(server.take_carried_share_keys().is_empty(), "once");
    assert!(server.take_carried_unmask().is_empty());
    // the old state's fingerprints tell a replay of a handed-over message
    assert!(matches!(
        server.receive_share_keys(&before[0]),
        Err(Error::Replayed { .. })
    ));
    kept.extend_from_slice(after);
    let mut sum = MaskedSum::zero(&cfg);
    for m in server.close_share_keys(kept).unwrap() {
        let msg = cs[m.to.0 as usize - 1]
            .masked_input(&m, &xs[m.to.0 as usize - 1])
            .unwrap();
        server.receive_masked_input(&msg, &mut sum).unwrap();
    }
    let requests = server.close_masked_input().unwrap();
    let answers = unmask_all(&mut server, &mut cs, &requests);
    let held: Vec<serde_json::Value> = answers[..2]
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    let mut server = old(&server, "responses", &held);
    assert!(server.take_carried_share_keys().is_empty());
    let mut kept = server.take_carried_unmask();
    assert_eq!(kept, answers[..2], "handed over");
    assert!(server.take_carried_unmask().is_empty(), "once");
    let state = serde_json::to_value(&server).unwrap();
    assert!(state.get("pending_shares").is_none() && state.get("responses").is_none());
    kept.extend_from_slice(&answers[2..]);
    let agg = server.finish(sum, kept).unwrap();
    assert_eq!(agg.contributors.len(), 5);
    assert_eq!(agg.sum, sum_of(&cfg, &xs, &agg.contributors));
}

/// The messages a relay hands to a stage's close must be the ones the server accepted: one
/// missing, one altered, one twice or one never accepted is refused, and nothing changes, so
/// the true ones still close the stage.
#[test]
fn a_close_refuses_stored_messages_that_were_not_the_accepted_ones() {
    let Setup {
        cfg,
        mut cs,
        mut server,
        keys,
    } = after_advertise(5, 3);
    let shared = share_all(&mut server, &mut cs, &keys);
    let mut altered = shared.clone();
    altered[1].shares[0].ciphertext[0] ^= 1;
    let mut stranger = shared.clone();
    stranger[4].from = ClientId(6);
    for (case, stored) in [
        ("one missing", shared[1..].to_vec()),
        ("one altered", altered),
        ("one twice", [&shared[..], &shared[..1]].concat()),
        ("one never accepted", stranger),
    ] {
        assert!(
            matches!(server.close_share_keys(stored), Err(Error::BadStored(_))),
            "{case}"
        );
        assert_eq!(server.round(), Round::ShareKeys, "{case}");
    }
    let relays = server.close_share_keys(shared.into_iter().rev()).unwrap();
    assert_eq!(relays.len(), 5);
    let xs = inputs(&cfg);
    let mut sum = MaskedSum::zero(&cfg);
    for m in &relays {
        let msg = cs[m.to.0 as usize - 1]
            .masked_input(m, &xs[m.to.0 as usize - 1])
            .unwrap();
        server.receive_masked_input(&msg, &mut sum).unwrap();
    }
    let requests = server.close_masked_input().unwrap();
    let answers = unmask_all(&mut server, &mut cs, &requests);
    let mut altered = answers.clone();
    altered[2].self_mask_shares[0].share[0] ^= 1;
    assert!(matches!(
        server.finish(sum.clone(), altered),
        Err(Error::BadStored(_))
    ));
    assert!(matches!(
        server.finish(sum.clone(), answers[..4].to_vec()),
        Err(Error::BadStored(_))
    ));
    let agg = server.finish(sum, answers).unwrap();
    assert_eq!(agg.sum, sum_of(&cfg, &xs, &agg.contributors));
}
