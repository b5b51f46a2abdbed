-- 0009_cluster_uid: a cluster's id is the name its users gave it, and a name
-- can be used again once its cluster is deleted. Each cluster (each life of a
-- name) gets a uid of its own, and its operations and events carry it, so the
-- history of one cluster never mixes with an earlier one's of the same name.
ALTER TABLE clusters ADD COLUMN uid uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX clusters_uid ON clusters (uid);
ALTER TABLE operations ADD COLUMN cluster_uid uuid;
ALTER TABLE events ADD COLUMN cluster_uid uuid;

-- History written before: what happened since the current cluster of a name
-- was created is its; what happened before belongs to earlier lives that can
-- no longer be told apart, which share one uid per name.
UPDATE operations o SET cluster_uid = c.uid FROM clusters c
    WHERE o.cluster_id = c.id AND o.created_at >= c.created_at;
UPDATE events e SET cluster_uid = c.uid FROM clusters c
    WHERE e.cluster_id = c.id AND e.created_at >= c.created_at;
CREATE TEMPORARY TABLE earlier_lives ON COMMIT DROP AS
    SELECT cluster_id, gen_random_uuid() AS uid FROM (
        SELECT cluster_id FROM operations WHERE cluster_id IS NOT NULL AND cluster_uid IS NULL
        UNION
        SELECT cluster_id FROM events WHERE cluster_id IS NOT NULL AND cluster_uid IS NULL) x;
UPDATE operations o SET cluster_uid = l.uid FROM earlier_lives l
    WHERE o.cluster_id = l.cluster_id AND o.cluster_uid IS NULL;
UPDATE events e SET cluster_uid = l.uid FROM earlier_lives l
    WHERE e.cluster_id = l.cluster_id AND e.cluster_uid IS NULL;

-- From now on every row written with a cluster_id gets the uid of the cluster
-- that has that id. An event written after its cluster's row is gone (the
-- deletion's last one) takes its operation's.
CREATE FUNCTION operations_cluster_uid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.cluster_id IS NOT NULL AND NEW.cluster_uid IS NULL THEN
        NEW.cluster_uid := (SELECT uid FROM clusters WHERE id = NEW.cluster_id);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER operations_cluster_uid BEFORE INSERT ON operations
    FOR EACH ROW EXECUTE FUNCTION operations_cluster_uid();

CREATE FUNCTION events_cluster_uid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.cluster_id IS NOT NULL AND NEW.cluster_uid IS NULL THEN
        NEW.cluster_uid := coalesce(
            (SELECT uid FROM clusters WHERE id = NEW.cluster_id),
            (SELECT cluster_uid FROM operations WHERE id = NEW.operation_id));
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER events_cluster_uid BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_cluster_uid();

CREATE INDEX operations_cluster_uid ON operations (cluster_uid, created_at);
CREATE INDEX events_cluster_uid ON events (cluster_uid, id);
