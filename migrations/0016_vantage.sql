-- 0016_vantage: a host's loss is decided from more than one vantage point.
-- Besides cairnd, the agent of each replica probes the replica's primary
-- several times a second and reports how long it has not answered
-- (primary_silent_ms); the moment its silence began is kept here, NULL
-- while it answers. A host whose agent is silent and whose primaries no
-- longer answer their replicas' agents nor cairnd is lost within about a
-- second, rather than after the whole heartbeat timeout.
ALTER TABLE nodes ADD COLUMN primary_silent_since timestamptz;
-- The monitor looks for silent primaries ten times a second: from the few
-- replicas that report one.
CREATE INDEX nodes_primary_silent ON nodes (shard_id) WHERE primary_silent_since IS NOT NULL;
