-- Federated studies: the study, its checkpoints (global model and server state after every
-- aggregated round), its rounds (one row per attempt), the data holders' tasks and their
-- evaluations. The round loop is a state machine over these rows, so a restarted gateway
-- resumes where it stopped.

create table study (
    study_id blob primary key,
    permit_id blob not null references permit (permit_id),
    organisation text not null,
    researcher_sub text not null,
    spec text not null,
    status text not null check (status in ('running', 'suspended', 'completed', 'cancelled', 'stopped', 'failed')),
    status_reason text,
    created_at text not null,
    updated_at text not null,
    rounds_done integer not null,
    epsilon_spent real not null,
    row_version integer not null,
    -- Seeds the aggregation noise of every round; never returned by the API.
    noise_key blob not null
);
create index study_organisation on study (organisation, created_at);
create index study_live on study (status);

create table study_checkpoint (
    study_id blob not null references study (study_id),
    round integer not null,
    global_model blob not null,
    server_state text not null,
    accountant text not null,
    recorded_at text not null,
    primary key (study_id, round)
);

create table study_round (
    round_id blob primary key,
    study_id blob not null references study (study_id),
    round integer not null,
    attempt integer not null,
    phase text not null check (phase in ('collecting', 'aggregated', 'discarded', 'failed')),
    registry_version integer not null,
    participants text not null,
    opened_at text not null,
    deadline text not null,
    closed_at text,
    reason text,
    epsilon_round real,
    epsilon_total real,
    summary text not null,
    unique (study_id, round, attempt)
);

create table study_task (
    task_id blob primary key,
    study_id blob not null references study (study_id),
    round_id blob not null references study_round (round_id),
    round integer not null,
    kind text not null check (kind in ('fit', 'evaluate')),
    data_holder text not null,
    status text not null check (status in ('pending', 'completed', 'discarded', 'expired')),
    created_at text not null,
    deadline text not null,
    completed_at text,
    report text,
    result blob
);
create index study_task_holder on study_task (data_holder, status);
create index study_task_round on study_task (round_id);

create table study_evaluation (
    study_id blob not null references study (study_id),
    round integer not null,
    data_holder text not null,
    evaluation text not null,
    recorded_at text not null,
    primary key (study_id, round, data_holder)
);
