-- Secure aggregation relayed by the gateway (docs/secure-aggregation.md). For each open round
-- of a study under secure aggregation: the relay's protocol state (public keys, share
-- ciphertexts awaiting relay, the running sum of masked inputs, revealed shares of masks) and
-- the messages waiting for each holder. Never one holder's update in clear. Both are deleted
-- when the round closes; a restarted gateway resumes the protocol from them.
create table secagg_session (
    round_id blob primary key references study_round (round_id),
    state blob not null,
    row_version integer not null
);

create table secagg_message (
    round_id blob not null references study_round (round_id),
    client integer not null,
    kind text not null check (kind in ('keys', 'shares', 'unmask')),
    message blob not null,
    primary key (round_id, client, kind)
);
