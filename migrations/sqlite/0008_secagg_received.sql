-- The protocol messages a secure-aggregation relay accepted and keeps until the stage that
-- uses them closes (docs/secure-aggregation.md): each holder's ShareKeys (its share
-- ciphertexts for its neighbours, until relayed) and its Unmasking answer (the shares it
-- reveals, until the sum is unmasked). Kept inside secagg_session.state they made the state
-- that every message, holder's poll and round-loop pass reads and rewrites grow with holders
-- times neighbours (megabytes at a thousand holders); here each message is written once and
-- read once, by the stage's close. The state keeps a fingerprint of each, so a row that is not
-- the accepted message is refused at the close. A state written before this table still holds
-- the messages, which the gateway moves here on first use. Deleted with the round's relay
-- state; the ShareKeys rows already when their stage closes.
create table secagg_received (
    round_id blob not null references study_round (round_id),
    client integer not null,
    kind text not null check (kind in ('share_keys', 'unmask')),
    message blob not null,
    primary key (round_id, client, kind)
);
