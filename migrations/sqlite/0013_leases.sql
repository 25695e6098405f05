-- Work that one replica of a fleet does at a time (src/federation/fleet.rs): a study's round
-- loop (`study:<id>`), the periodic sweeps (`sweeps`), a webhook endpoint's deliveries
-- (`webhook:<name>`). The owner renews its lease while it works; once `expires_at` passes
-- without renewal (the owner died), any replica may take it over. Correctness never rests on
-- the lease alone: every change still checks its row version.
create table lease (
    name text primary key,
    owner text not null,
    expires_at text not null
);
