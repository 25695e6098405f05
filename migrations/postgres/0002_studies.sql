-- Federated studies: the study, its checkpoints (global model and server state after every
-- aggregated round), its rounds (one row per attempt), the data holders' tasks and their
-- evaluations. The round loop is a state machine over these rows, so a restarted gateway
-- resumes where it stopped.

create table study (
    study_id uuid primary key,
    permit_id uuid not null references permit (permit_id),
    organisation text not null,
    researcher_sub text not null,
    spec jsonb not null,
    status text not null check (status in ('running', 'suspended', 'completed', 'cancelled', 'stopped', 'failed')),
    status_reason text,
    created_at timestamptz not null,
    updated_at timestamptz not null,
    rounds_done bigint not null,
    epsilon_spent double precision not null,
    row_version bigint not null,
    -- Seeds the aggregation noise of every round; never returned by the API.
    noise_key bytea not null
);
create index study_organisation on study (organisation, created_at);
create index study_live on study (status);

create table study_checkpoint (
    study_id uuid not null references study (study_id),
    round bigint not null,
    global_model bytea not null,
    server_state jsonb not null,
    accountant jsonb not null,
    recorded_at timestamptz not null,
    primary key (study_id, round)
);

create table study_round (
    round_id uuid primary key,
    study_id uuid not null references study (study_id),
    round bigint not null,
    attempt bigint not null,
    phase text not null check (phase in ('collecting', 'aggregated', 'discarded', 'failed')),
    registry_version bigint not null,
    participants jsonb not null,
    opened_at timestamptz not null,
    deadline timestamptz not null,
    closed_at timestamptz,
    reason text,
    epsilon_round double precision,
    epsilon_total double precision,
    summary jsonb not null,
    unique (study_id, round, attempt)
);

create table study_task (
    task_id uuid primary key,
    study_id uuid not null references study (study_id),
    round_id uuid not null references study_round (round_id),
    round bigint not null,
    kind text not null check (kind in ('fit', 'evaluate')),
    data_holder text not null,
    status text not null check (status in ('pending', 'completed', 'discarded', 'expired')),
    created_at timestamptz not null,
    deadline timestamptz not null,
    completed_at timestamptz,
    report jsonb,
    result bytea
);
create index study_task_holder on study_task (data_holder, status);
create index study_task_round on study_task (round_id);

create table study_evaluation (
    study_id uuid not null references study (study_id),
    round bigint not null,
    data_holder text not null,
    evaluation jsonb not null,
    recorded_at timestamptz not null,
    primary key (study_id, round, data_holder)
);
