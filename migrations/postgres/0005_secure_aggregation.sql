-- Secure aggregation relayed by the gateway (docs/secure-aggregation.md). For each open round
-- of a study under secure aggregation: the relay's protocol state (public keys, share
-- ciphertexts awaiting relay, the running sum of masked inputs, revealed shares of masks) and
-- the messages waiting for each holder. Never one holder's update in clear. Both are deleted
-- when the round closes; a restarted gateway resumes the protocol from them.
create table secagg_session (
    round_id uuid primary key references study_round (round_id),
    state bytea not null,
    row_version bigint not null
);

create table secagg_message (
    round_id uuid not null references study_round (round_id),
    client bigint not null,
    kind text not null check (kind in ('keys', 'shares', 'unmask')),
    message bytea not null,
    primary key (round_id, client, kind)
);
