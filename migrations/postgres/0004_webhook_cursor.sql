-- How far each configured webhook endpoint has been served: the audit entry up to which its
-- events were delivered or given up (src/webhooks.rs). The audit trail is the outbox: a state
-- change and its entry commit together, so an event is never announced for a change that
-- rolled back, and none is lost when the gateway stops between commit and delivery.
create table webhook_cursor (
    endpoint text primary key,
    last_seq bigint not null check (last_seq >= 0)
);
