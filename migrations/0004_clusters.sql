-- 0004_clusters: clusters are named by their users ("orders"), as on
-- ElastiCache, so their id becomes text everywhere it is referenced; each
-- cluster keeps its engine password encrypted; operations record their
-- steps' timing.

ALTER TABLE shards DROP CONSTRAINT shards_cluster_id_fkey;
ALTER TABLE nodes DROP CONSTRAINT nodes_cluster_id_fkey;
ALTER TABLE clusters ALTER COLUMN id DROP DEFAULT, ALTER COLUMN id TYPE text;
ALTER TABLE shards ALTER COLUMN cluster_id TYPE text;
ALTER TABLE nodes ALTER COLUMN cluster_id TYPE text;
ALTER TABLE operations ALTER COLUMN cluster_id TYPE text;
ALTER TABLE events ALTER COLUMN cluster_id TYPE text;
ALTER TABLE shards ADD FOREIGN KEY (cluster_id) REFERENCES clusters (id) ON DELETE CASCADE;
ALTER TABLE nodes ADD FOREIGN KEY (cluster_id) REFERENCES clusters (id) ON DELETE CASCADE;

-- The id is the name; a deleted cluster's row goes once its engines are gone,
-- so the name can be used again.
DROP INDEX clusters_live_name;
ALTER TABLE clusters DROP COLUMN name, DROP COLUMN deleted_at;
ALTER TABLE clusters ADD CONSTRAINT clusters_id_shape
    CHECK (id ~ '^[a-z]([a-z0-9]|-(?!-))*[a-z0-9]$|^[a-z]$' AND length(id) <= 40);
ALTER TABLE clusters
    ADD COLUMN auth_secret bytea,              -- AES-256-GCM: nonce || ciphertext || tag
    ADD COLUMN engine_version_actual text;     -- what the engines report, e.g. 8.0.1
ALTER TABLE clusters ADD CONSTRAINT clusters_status
    CHECK (status IN ('creating', 'available', 'modifying', 'deleting', 'create-failed',
                      'degraded'));

-- A shard's name as users see it ("0001") and its intended primary (the
-- engines decide the real roles).
ALTER TABLE shards ADD COLUMN name text;
UPDATE shards SET name = lpad((index + 1)::text, 4, '0');
ALTER TABLE shards ALTER COLUMN name SET NOT NULL;
ALTER TABLE nodes ADD COLUMN ordinal integer NOT NULL DEFAULT 0;  -- 0: placed as primary

ALTER TABLE operations
    ADD COLUMN steps   jsonb NOT NULL DEFAULT '[]',  -- [{name, started_at, finished_at}]
    ADD COLUMN wake_at timestamptz;                -- a waiting step runs again from then
CREATE INDEX operations_cluster_state ON operations (cluster_id, state);

-- Spec changes accepted but not yet in effect on the engines (parameters
-- that apply when each node next restarts), shown as pending_changes.
ALTER TABLE clusters ADD COLUMN pending_changes jsonb NOT NULL DEFAULT '{}';

-- When cairnd itself last read a node's role from its engine (forming a
-- cluster, a failover). An agent's report read before that moment may still
-- be on its way; for a few seconds cairnd's own reading wins.
ALTER TABLE nodes ADD COLUMN role_observed_at timestamptz;
