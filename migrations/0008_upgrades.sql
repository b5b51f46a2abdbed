-- 0008_upgrades: an engine upgrade asked for the maintenance window waits
-- as a 'scheduled' operation until cairnd's scheduler sees the window open
-- and makes it 'pending' for a runner. Scheduled operations do not count as
-- active: the cluster can be changed meanwhile.
ALTER TABLE operations DROP CONSTRAINT operations_state_check;
ALTER TABLE operations ADD CONSTRAINT operations_state_check
    CHECK (state IN ('scheduled', 'pending', 'running', 'succeeded', 'failed', 'cancelled'));
-- cairnd's scheduler looks for them every second.
CREATE INDEX operations_scheduled ON operations (created_at) WHERE state = 'scheduled';
