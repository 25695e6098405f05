-- Each opted-out subject's match value: the OPRF of its pseudonym under the registry's key
-- (RFC 9497, ristretto255-SHA512; docs/threat-model.md). A holder filters its cohort against
-- salted copies of these (`POST /v1/opt-outs/match`) without sending a pseudonym. Written when
-- an opt-out is registered or imported, the pseudonym then in hand; subjects registered before
-- this table have none until the registry is imported again from its source.
create table optout_match (
    subject_key text primary key,
    match_value text not null
);
