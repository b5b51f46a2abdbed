-- 0023_audit_log: every call that changes something or tries to -- who
-- (the API token, or the agents' bootstrap token), what (method, path, the
-- ElastiCache action), when, from where (the client's address) and how it
-- ended (status, request id) -- kept for GET /v1/audit. Calls refused
-- before their caller is known (401) or for their rate (429) are in the
-- request log only: recording them would let anyone fill this table.
CREATE TABLE audit_log (
    id           bigserial PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    request_id   text NOT NULL,
    caller_kind  text NOT NULL CHECK (caller_kind IN ('token', 'agent_bootstrap')),
    token_id     text,
    token_scope  text,
    remote_address text NOT NULL,
    method       text NOT NULL,
    path         text NOT NULL,
    action       text,
    status       integer NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_token ON audit_log (token_id, id);
