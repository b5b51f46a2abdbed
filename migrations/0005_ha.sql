-- 0005_ha: high availability. In cluster mode disabled cairnd decides which
-- node of a group is the primary, so nodes.role becomes cairnd's designation
-- there; what each engine last said of itself is kept apart in observed_role,
-- and a returning old primary that still calls itself one is demoted before
-- anything publishes it. A node's desired config names its primary
-- (replicaof) and holds a crashed primary down, so a change of primary is a
-- change of every node's desired state in that shard.

ALTER TABLE nodes
    ADD COLUMN observed_role text CHECK (observed_role IN ('primary', 'replica')),
    -- When process_state last changed: how long an engine has been
    -- unresponsive, or since when a primary is down.
    ADD COLUMN state_since   timestamptz;

CREATE FUNCTION nodes_role_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM hosts_bump_desired(h.host_id)
    FROM (SELECT DISTINCT host_id FROM nodes
          WHERE shard_id = NEW.shard_id AND host_id IS NOT NULL) h;
    RETURN NULL;
END $$;

-- A node's hold_after_crash also depends on whether a shard-mate runs (one
-- that could take over), so an engine starting or ceasing to run counts too.
CREATE TRIGGER nodes_role_update AFTER UPDATE OF role, process_state ON nodes
    FOR EACH ROW WHEN (OLD.role IS DISTINCT FROM NEW.role
        OR ((OLD.process_state = 'running') IS DISTINCT FROM (NEW.process_state = 'running')))
    EXECUTE FUNCTION nodes_role_changed();

CREATE INDEX nodes_shard ON nodes (shard_id);
