-- The running sum of a secure-aggregation round's masked inputs gets a column of its own
-- (docs/secure-aggregation.md): little-endian ring elements, NULL until the first masked input.
-- It is the only part of the relay's state as large as the model; kept inside `state` it was
-- rewritten with every protocol message and read by every holder's poll. A state written
-- before this column still carries its sum, which the gateway moves here on first use.
alter table secagg_session add column masked_sum bytea;
