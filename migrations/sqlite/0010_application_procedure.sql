-- The Art. 67-68 procedure: more application states (draft, incomplete, assessing, fee_pending,
-- awaiting_confirmation, partially_approved, lapsed), the record of each step (`procedure`,
-- JSON) and the deadline the current state runs against (`due_at`, recomputed at every step;
-- whether it has passed is always computed from the time).
--
-- SQLite cannot change a check constraint in place: the table is rebuilt. Foreign keys cannot
-- be switched off inside the migration's transaction, so they are deferred to its commit:
-- dropping the old table leaves the permits' references open, and putting each row back into
-- the new table closes them again.
-- Applications received before the procedure existed were taken as complete on receipt: their
-- decision clock keeps running from their submission, as it did, and their decisions count as
-- public when made. The gateway fills `due_at` of migrated rows at start-up.
pragma defer_foreign_keys = on;
create table application_old as select * from application;
drop table application;
create table application (
    application_id blob primary key,
    organisation text not null,
    applicant_sub text not null,
    status text not null check (status in ('draft', 'submitted', 'incomplete', 'assessing',
        'fee_pending', 'awaiting_confirmation', 'approved', 'partially_approved', 'rejected',
        'withdrawn', 'lapsed')),
    submitted_at text not null,
    decided_at text,
    decided_by text,
    decision_reason text,
    permit_id blob,
    request text not null,
    procedure text not null default '{}',
    due_at text
);
insert into application (application_id, organisation, applicant_sub, status, submitted_at,
    decided_at, decided_by, decision_reason, permit_id, request, procedure, due_at)
select application_id, organisation, applicant_sub,
    case status when 'submitted' then 'assessing' else status end,
    submitted_at, decided_at, decided_by, decision_reason, permit_id, request,
    case status
        when 'submitted' then json_object('completed_at', submitted_at)
        when 'withdrawn' then '{}'
        else json_object('completed_at', submitted_at, 'published_at', decided_at)
    end,
    null
from application_old;
drop table application_old;
create index application_organisation on application (organisation, submitted_at);
create index application_due on application (due_at) where due_at is not null;
-- Deadline events raised once each, whichever replica's sweep sees them first.
create table application_deadline (
    application_id blob not null references application (application_id),
    kind text not null,
    due_at text not null,
    raised_at text not null,
    primary key (application_id, kind, due_at)
);
