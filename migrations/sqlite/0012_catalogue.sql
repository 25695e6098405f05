-- The Art. 77 dataset catalogue: each dataset's current description (the parsed HealthDCAT-AP
-- dataset as JSON), and every revision a holder published, kept for the audit trail.
create table catalogue_dataset (
    dataset_id blob primary key,
    publisher text not null,
    status text not null check (status in ('published', 'withdrawn')),
    revision integer not null,
    issued_at text not null,
    modified_at text not null,
    dataset text not null
);
create index catalogue_dataset_listing on catalogue_dataset (status, issued_at, dataset_id);
create index catalogue_dataset_publisher on catalogue_dataset (publisher);

create table catalogue_dataset_revision (
    dataset_id blob not null references catalogue_dataset (dataset_id),
    revision integer not null,
    recorded_at text not null,
    recorded_by text not null,
    dataset text not null,
    primary key (dataset_id, revision)
);
