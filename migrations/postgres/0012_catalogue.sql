-- The Art. 77 dataset catalogue: each dataset's current description (the parsed HealthDCAT-AP
-- dataset as JSON), and every revision a holder published, kept for the audit trail.
create table catalogue_dataset (
    dataset_id uuid primary key,
    publisher text not null,
    status text not null check (status in ('published', 'withdrawn')),
    revision bigint not null,
    issued_at timestamptz not null,
    modified_at timestamptz not null,
    dataset jsonb not null
);
create index catalogue_dataset_listing on catalogue_dataset (status, issued_at, dataset_id);
create index catalogue_dataset_publisher on catalogue_dataset (publisher);

create table catalogue_dataset_revision (
    dataset_id uuid not null references catalogue_dataset (dataset_id),
    revision bigint not null,
    recorded_at timestamptz not null,
    recorded_by text not null,
    dataset jsonb not null,
    primary key (dataset_id, revision)
);
