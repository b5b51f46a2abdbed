-- 0007_metric_series: compacted days as cairnd encodes them. A finished UTC
-- day of 60-second samples becomes one row per node and metric holding its
-- 1,440 minutes in the form of controlplane/series_codec.h (decimal
-- differences or XORed bits, then deflate): about a byte a value where
-- PostgreSQL's own compression of the hourly blocks of 0006 kept three. A
-- query of one metric reads only that metric's rows.

CREATE TABLE metric_series (
    cluster_id text NOT NULL,
    node_id    uuid NOT NULL,
    day        date NOT NULL,     -- UTC; slot m is the minute m of the day
    metric     smallint NOT NULL, -- catalog position, from 1
    data       bytea NOT NULL,
    PRIMARY KEY (cluster_id, metric, day, node_id)
) PARTITION BY RANGE (day);

-- The series partition of the UTC day d, made when missing; its data is
-- already compressed, so it stays in the row and is not compressed again.
CREATE FUNCTION metric_series_partition(d date) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    part text := 'metric_series_' || to_char(d, 'YYYYMMDD');
BEGIN
    IF to_regclass(part) IS NULL THEN
        BEGIN
            EXECUTE format('CREATE TABLE %I PARTITION OF metric_series'
                           ' FOR VALUES FROM (%L) TO (%L)', part, d, d + 1);
            EXECUTE format('ALTER TABLE %I ALTER COLUMN data SET STORAGE MAIN', part);
        EXCEPTION WHEN duplicate_table OR unique_violation THEN
            NULL;
        END;
    END IF;
END $$;

-- Retention drops the series partitions with the sample partitions.
CREATE OR REPLACE FUNCTION metric_partitions_drop_before(keep_from date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    p record;
    n integer := 0;
BEGIN
    FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent IN ('metric_samples'::regclass, 'metric_series'::regclass)
               AND c.relname ~ '^metric_(samples|series)_[0-9]{8}$'
               AND to_date(right(c.relname, 8), 'YYYYMMDD') < keep_from LOOP
        EXECUTE format('DROP TABLE %I', p.relname);
        n := n + 1;
    END LOOP;
    DELETE FROM metric_compacted_days WHERE day < keep_from;
    RETURN n;
END $$;

-- The days compacted, so that a sample arriving for one of them (an agent
-- back after a long outage) finds its node's day to bring back into samples.
CREATE TABLE metric_compacted_days (
    day          date PRIMARY KEY,
    compacted_at timestamptz NOT NULL DEFAULT now()
);

-- The hourly blocks of 0006 go back into samples, in partitions made for
-- their days; cairnd compacts those days again into series.
DO $$
DECLARE
    first_day date;
    last_day  date;
BEGIN
    SELECT min((hour AT TIME ZONE 'UTC')::date), max((hour AT TIME ZONE 'UTC')::date)
        INTO first_day, last_day FROM metric_blocks;
    IF first_day IS NOT NULL THEN
        PERFORM metric_partitions(first_day, last_day);
        INSERT INTO metric_samples (cluster_id, node_id, at, period_s, vals)
        SELECT b.cluster_id, b.node_id, b.hour + make_interval(mins => mi), 60,
               (SELECT array_agg(b.vals[(i - 1) * 60 + mi + 1] ORDER BY i)
                FROM generate_series(1, b.ncat) i)
        FROM metric_blocks b, generate_series(0, 59) mi
        WHERE EXISTS (SELECT 1 FROM generate_series(1, b.ncat) i
                      WHERE b.vals[(i - 1) * 60 + mi + 1] IS NOT NULL)
        ON CONFLICT (cluster_id, at, node_id) DO NOTHING;
    END IF;
END $$;

-- After the day d is compacted: its 60-second samples go; the partition
-- goes whole unless it also holds samples of other periods (shortened for
-- tests), which are not compacted.
CREATE FUNCTION metric_drop_compacted_samples(d date) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    part text := 'metric_samples_' || to_char(d, 'YYYYMMDD');
    others boolean;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE period_s <> 60)', part) INTO others;
    IF others THEN
        EXECUTE format('DELETE FROM %I WHERE period_s = 60', part);
    ELSE
        EXECUTE format('DROP TABLE %I', part);
    END IF;
END $$;

DROP FUNCTION metric_compact_day(date, integer);
DROP TABLE metric_blocks;
