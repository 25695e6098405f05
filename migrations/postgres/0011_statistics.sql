-- Statistics answered by the federation (Art. 69 data requests, and statistics under a permit):
-- one run per query (`body` holds the whole run: query, rules, outcome, review) and one task per
-- data holder (`contribution` holds the node's partial once it answered; it never leaves the
-- gateway).
create table statistics_run (
    run_id uuid primary key,
    permit_id uuid not null references permit (permit_id),
    application_id uuid references application (application_id),
    organisation text not null,
    status text not null check (status in ('computing', 'under_review', 'released', 'withheld', 'failed')),
    created_at timestamptz not null,
    deadline timestamptz not null,
    body jsonb not null,
    row_version bigint not null
);
create index statistics_run_permit on statistics_run (permit_id, created_at);
create index statistics_run_organisation on statistics_run (organisation, created_at);
create index statistics_run_computing on statistics_run (deadline) where status = 'computing';

create table statistics_task (
    task_id uuid primary key,
    run_id uuid not null references statistics_run (run_id),
    data_holder text not null,
    deadline timestamptz not null,
    completed_at timestamptz,
    contribution jsonb
);
create index statistics_task_run on statistics_task (run_id);
create index statistics_task_open on statistics_task (data_holder, deadline) where completed_at is null;
