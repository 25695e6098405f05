-- The Art. 67-68 procedure: more application states (draft, incomplete, assessing, fee_pending,
-- awaiting_confirmation, partially_approved, lapsed), the record of each step (`procedure`)
-- and the deadline the current state runs against (`due_at`, recomputed at every step; whether
-- it has passed is always computed from the time). Applications received before the procedure
-- existed were taken as complete on receipt: their decision clock keeps running from their
-- submission, as it did, and their decisions count as public when made. The gateway fills
-- `due_at` of migrated rows at start-up.
alter table application drop constraint application_status_check;
alter table application add constraint application_status_check check (status in ('draft',
    'submitted', 'incomplete', 'assessing', 'fee_pending', 'awaiting_confirmation', 'approved',
    'partially_approved', 'rejected', 'withdrawn', 'lapsed'));
alter table application add column procedure jsonb not null default '{}';
alter table application add column due_at timestamptz;
update application
set status = 'assessing',
    procedure = jsonb_build_object('completed_at', submitted_at)
where status = 'submitted';
update application
set procedure = jsonb_build_object('completed_at', submitted_at, 'published_at', decided_at)
where status in ('approved', 'rejected');
create index application_due on application (due_at) where due_at is not null;
-- Deadline events raised once each, whichever replica's sweep sees them first.
create table application_deadline (
    application_id uuid not null references application (application_id),
    kind text not null,
    due_at timestamptz not null,
    raised_at timestamptz not null,
    primary key (application_id, kind, due_at)
);
