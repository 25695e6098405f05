-- Governance core: applications, permits (with term versions), the Art. 71 opt-out registry and
-- the hash-chained audit trail. Registry and audit rows are append-only. Ids are 16-byte blobs,
-- timestamps RFC 3339 text, JSON documents text.

create table application (
    application_id blob primary key,
    organisation text not null,
    applicant_sub text not null,
    status text not null check (status in ('submitted', 'approved', 'rejected', 'withdrawn')),
    submitted_at text not null,
    decided_at text,
    decided_by text,
    decision_reason text,
    permit_id blob,
    request text not null
);
create index application_organisation on application (organisation, submitted_at);

create table permit (
    permit_id blob primary key,
    application_id blob not null references application (application_id),
    organisation text not null,
    principal_investigator text not null,
    public_body integer not null,
    issued_at text not null,
    valid_from text not null,
    expires_at text not null,
    extended_at text,
    status text not null check (status in ('active', 'suspended', 'revoked', 'expired')),
    status_since text,
    status_reason text,
    terms text not null,
    terms_version integer not null,
    row_version integer not null,
    epsilon_spent real not null
);
create index permit_organisation on permit (organisation, issued_at);
create index permit_expiry on permit (status, expires_at);

create table permit_data_holder (
    permit_id blob not null references permit (permit_id),
    data_holder text not null,
    primary key (permit_id, data_holder)
);
create index permit_data_holder_holder on permit_data_holder (data_holder);

create table permit_version (
    permit_id blob not null references permit (permit_id),
    terms_version integer not null,
    terms text not null,
    recorded_at text not null,
    recorded_by text not null,
    reason text,
    primary key (permit_id, terms_version)
);

create table optout_event (
    seq integer primary key autoincrement,
    record_id blob not null,
    subject_key text not null,
    kind text not null check (kind in ('registered', 'withdrawn')),
    scope text not null,
    member_state text not null,
    effective_at text not null,
    recorded_at text not null,
    channel text not null
);
create index optout_event_subject on optout_event (subject_key, seq);
create unique index optout_event_one_registration on optout_event (record_id) where kind = 'registered';
create unique index optout_event_one_withdrawal on optout_event (record_id) where kind = 'withdrawn';

create table audit_event (
    seq integer primary key,
    event_id blob not null unique,
    recorded_at text not null,
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

create trigger audit_event_no_update before update on audit_event
begin select raise(abort, 'audit_event is append-only'); end;
create trigger audit_event_no_delete before delete on audit_event
begin select raise(abort, 'audit_event is append-only'); end;
create trigger optout_event_no_update before update on optout_event
begin select raise(abort, 'optout_event is append-only'); end;
create trigger optout_event_no_delete before delete on optout_event
begin select raise(abort, 'optout_event is append-only'); end;
create trigger permit_version_no_update before update on permit_version
begin select raise(abort, 'permit_version is append-only'); end;
create trigger permit_version_no_delete before delete on permit_version
begin select raise(abort, 'permit_version is append-only'); end;
