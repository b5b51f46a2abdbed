-- 0003_agents: what cairnd needs to drive cairn-agents. Each host carries a
-- desired-state generation that moves whenever the set of engines it should
-- run changes; a trigger bumps it and wakes the agent's long-poll through
-- NOTIFY, so a change reaches the VM in milliseconds, on any cairnd.

ALTER TABLE hosts
    ADD COLUMN desired_generation bigint NOT NULL DEFAULT 1,
    ADD COLUMN agent_version      text;

ALTER TABLE host_engines
    ADD CONSTRAINT host_engines_engine CHECK (engine IN ('redis', 'valkey'));

-- A node's desired state (what the agent should run) next to what the agent
-- last reported about its process.
ALTER TABLE nodes
    ADD COLUMN node_type          text NOT NULL REFERENCES node_types (name),
    ADD COLUMN desired_state      text NOT NULL DEFAULT 'running'
        CHECK (desired_state IN ('running', 'stopped', 'deleted')),
    ADD COLUMN restart_policy     text NOT NULL DEFAULT 'always'
        CHECK (restart_policy IN ('always', 'on-failure', 'never')),
    ADD COLUMN parameters         jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN pid                integer,
    ADD COLUMN process_state      text
        CHECK (process_state IN ('starting', 'running', 'loading', 'stopped', 'crashed',
                                 'unresponsive')),
    ADD COLUMN running_version    text,      -- full version the running binary reports
    ADD COLUMN master_link_status text,
    ADD COLUMN sync_in_progress   boolean,
    ADD COLUMN loading            boolean,
    ADD COLUMN restarts           integer NOT NULL DEFAULT 0,
    ADD COLUMN reported_at        timestamptz;

ALTER TABLE events ADD COLUMN host_id uuid;
CREATE INDEX events_host ON events (host_id, id);

-- Bump the generation of every host whose desired set a change touches, and
-- tell listening cairnd processes which host it was.
CREATE FUNCTION hosts_bump_desired(host uuid) RETURNS void LANGUAGE sql AS $$
    UPDATE hosts SET desired_generation = desired_generation + 1 WHERE id = host;
    SELECT pg_notify('cairn_desired', host::text) WHERE host IS NOT NULL;
$$;

CREATE FUNCTION nodes_desired_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM hosts_bump_desired(OLD.host_id);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND
       (TG_OP = 'INSERT' OR NEW.host_id IS DISTINCT FROM OLD.host_id) THEN
        PERFORM hosts_bump_desired(NEW.host_id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER nodes_desired_insert_delete AFTER INSERT OR DELETE ON nodes
    FOR EACH ROW EXECUTE FUNCTION nodes_desired_changed();
CREATE TRIGGER nodes_desired_update AFTER UPDATE OF host_id, port, engine, engine_version,
    node_type, desired_state, restart_policy, parameters ON nodes
    FOR EACH ROW EXECUTE FUNCTION nodes_desired_changed();

-- A cluster's spec feeds every node's engine config (memory policy, AUTH...).
CREATE FUNCTION clusters_spec_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM hosts_bump_desired(h.host_id)
    FROM (SELECT DISTINCT host_id FROM nodes WHERE cluster_id = NEW.id AND host_id IS NOT NULL) h;
    RETURN NULL;
END $$;

CREATE TRIGGER clusters_spec_update AFTER UPDATE OF spec ON clusters
    FOR EACH ROW WHEN (OLD.spec IS DISTINCT FROM NEW.spec)
    EXECUTE FUNCTION clusters_spec_changed();
