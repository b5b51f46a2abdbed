-- 0006_metrics: metric samples. One row per node and period holds every
-- metric of the catalog (engine/metrics.c), by position, so a minute of a
-- node is one row, not sixty. Rows live in daily partitions: retention
-- drops whole partitions, never deletes rows.

CREATE TABLE metric_samples (
    cluster_id text NOT NULL,
    node_id    uuid NOT NULL,
    at         timestamptz NOT NULL,                  -- the period's start
    period_s   integer NOT NULL CHECK (period_s > 0), -- the agent's period (60 s by default)
    vals       real[] NOT NULL,                       -- by catalog position; NULL: no value
    PRIMARY KEY (cluster_id, at, node_id)
) PARTITION BY RANGE (at);

-- The partitions for the UTC days first..last, made when missing. Two
-- cairnds may race to make one; the loser finds it made.
CREATE FUNCTION metric_partitions(first date, last date) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    d date;
BEGIN
    FOR d IN SELECT generate_series(first, last, interval '1 day')::date LOOP
        BEGIN
            EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF metric_samples'
                           ' FOR VALUES FROM (%L) TO (%L)',
                           'metric_samples_' || to_char(d, 'YYYYMMDD'),
                           d::timestamp AT TIME ZONE 'UTC', (d + 1)::timestamp AT TIME ZONE 'UTC');
        EXCEPTION WHEN duplicate_table OR unique_violation THEN
            NULL;
        END;
    END LOOP;
END $$;

-- Drop the partitions wholly before the UTC day keep_from; returns how many.
CREATE FUNCTION metric_partitions_drop_before(keep_from date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    p record;
    n integer := 0;
BEGIN
    FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'metric_samples'::regclass
               AND c.relname ~ '^metric_samples_[0-9]{8}$'
               AND to_date(substr(c.relname, 16), 'YYYYMMDD') < keep_from LOOP
        EXECUTE format('DROP TABLE %I', p.relname);
        n := n + 1;
    END LOOP;
    RETURN n;
END $$;

SELECT metric_partitions(current_date - 1, current_date + 1);
