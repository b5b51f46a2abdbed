-- 0019_down_since: since when a node's engine has not served. state_since
-- starts again with every change of process_state, so an engine that its
-- agent restarts every few seconds and that never comes up (a data file it
-- cannot read after a full disk) never looked down for long, and was never
-- replaced. down_since spans the whole time from the moment it last served
-- (running, loading or unresponsive) and is NULL while it does; replacement
-- counts from it.
ALTER TABLE nodes ADD COLUMN down_since timestamptz;
UPDATE nodes SET down_since = state_since
    WHERE process_state IN ('starting', 'crashed', 'stopped');
