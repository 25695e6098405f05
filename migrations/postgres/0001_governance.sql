-- Governance core: applications, permits (with term versions), the Art. 71 opt-out registry and
-- the hash-chained audit trail. Registry and audit rows are append-only.

create table application (
    application_id uuid primary key,
    organisation text not null,
    applicant_sub text not null,
    status text not null check (status in ('submitted', 'approved', 'rejected', 'withdrawn')),
    submitted_at timestamptz not null,
    decided_at timestamptz,
    decided_by text,
    decision_reason text,
    permit_id uuid,
    request jsonb not null
);
create index application_organisation on application (organisation, submitted_at);

create table permit (
    permit_id uuid primary key,
    application_id uuid not null references application (application_id),
    organisation text not null,
    principal_investigator text not null,
    public_body boolean not null,
    issued_at timestamptz not null,
    valid_from timestamptz not null,
    expires_at timestamptz not null,
    extended_at timestamptz,
    status text not null check (status in ('active', 'suspended', 'revoked', 'expired')),
    status_since timestamptz,
    status_reason text,
    terms jsonb not null,
    terms_version bigint not null,
    row_version bigint not null,
    epsilon_spent double precision not null
);
create index permit_organisation on permit (organisation, issued_at);
create index permit_expiry on permit (status, expires_at);

create table permit_data_holder (
    permit_id uuid not null references permit (permit_id),
    data_holder text not null,
    primary key (permit_id, data_holder)
);
create index permit_data_holder_holder on permit_data_holder (data_holder);

create table permit_version (
    permit_id uuid not null references permit (permit_id),
    terms_version bigint not null,
    terms jsonb not null,
    recorded_at timestamptz not null,
    recorded_by text not null,
    reason text,
    primary key (permit_id, terms_version)
);

create table optout_event (
    seq bigserial primary key,
    record_id uuid not null,
    subject_key text not null,
    kind text not null check (kind in ('registered', 'withdrawn')),
    scope text not null,
    member_state text not null,
    effective_at timestamptz not null,
    recorded_at timestamptz not null,
    channel text not null
);
create index optout_event_subject on optout_event (subject_key, seq);
create unique index optout_event_one_registration on optout_event (record_id) where kind = 'registered';
create unique index optout_event_one_withdrawal on optout_event (record_id) where kind = 'withdrawn';

create table audit_event (
    seq bigint primary key,
    event_id uuid not null unique,
    recorded_at timestamptz not null,
    actor_sub text not null,
    actor_roles text not null,
    actor_organisation text,
    action text not null,
    outcome text not null,
    resource_type text not null,
    resource_id text,
    permit_id text,
    request_id text,
    http_status integer,
    detail text not null,
    prev_hash text not null,
    hash text not null
);
create index audit_event_recorded_at on audit_event (recorded_at);
create index audit_event_permit on audit_event (permit_id, seq);

create function reject_change() returns trigger language plpgsql as $$
begin
    raise exception '% is append-only', tg_table_name using errcode = 'insufficient_privilege';
end
$$;

create trigger audit_event_append_only before update or delete on audit_event
    for each row execute function reject_change();
create trigger audit_event_no_truncate before truncate on audit_event
    for each statement execute function reject_change();
create trigger optout_event_append_only before update or delete on optout_event
    for each row execute function reject_change();
create trigger optout_event_no_truncate before truncate on optout_event
    for each statement execute function reject_change();
create trigger permit_version_append_only before update or delete on permit_version
    for each row execute function reject_change();
