-- The running sum of a secure-aggregation round's masked inputs gets a table of its own
-- (docs/secure-aggregation.md): little-endian ring elements, no row until the first masked
-- input. It is the only part of the relay's state as large as the model; kept inside
-- secagg_session.state it was rewritten with every protocol message and read by every
-- holder's poll, and kept in a column of that row SQLite would still rewrite it with every
-- update of the row (it rewrites whole records), which the round loop makes on each pass.
-- A state written before this table still carries its sum, which the gateway moves here on
-- first use. Deleted with the round's relay state.
create table secagg_masked_sum (
    round_id blob primary key references study_round (round_id),
    masked_sum blob not null
);
