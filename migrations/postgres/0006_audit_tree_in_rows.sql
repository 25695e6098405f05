-- The audit tree's hashes move into the rows they belong to (docs/verifiable-log.md): entry
-- `seq` (leaf `seq - 1`) keeps in `tree_nodes` the hashes its append completes, level 0 (its
-- leaf hash) first, then one per trailing one bit of `seq - 1`, 32 bytes each. The perfect
-- subtree at level h, index i is therefore bytes [32h, 32h + 32) of entry ((i + 1) << h).
-- An append writes one row instead of a row and tree rows, and truncating the trail truncates
-- its tree with it. Entries that had no tree yet keep NULL until the gateway's start-up fills
-- them in, in order; filling a NULL is the one change the triggers let through.

alter table audit_event add column tree_nodes bytea
    check (tree_nodes is null or octet_length(tree_nodes) % 32 = 0);

drop trigger audit_event_append_only on audit_event;

update audit_event e set tree_nodes = t.nodes
from (
    select (idx + 1) << level as seq, string_agg(hash, ''::bytea order by level) as nodes
    from audit_log_tree
    group by 1
) t
where t.seq = e.seq;

create trigger audit_event_no_delete before delete on audit_event
    for each row execute function reject_change();
create trigger audit_event_no_update before update of
    seq, event_id, recorded_at, actor_sub, actor_roles, actor_organisation, action, outcome,
    resource_type, resource_id, permit_id, request_id, http_status, detail, prev_hash, hash
on audit_event
    for each row execute function reject_change();
create trigger audit_event_tree_once before update of tree_nodes on audit_event
    for each row when (old.tree_nodes is not null) execute function reject_change();

drop table audit_log_tree;
