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

-- Rollups: per node and 5-minute or 1-hour period, per metric (by catalog
-- position) the sum, minimum, maximum and count of the samples' values, so
-- Average, Minimum, Maximum, Sum and SampleCount over rollups are exact.
-- Kept 63 days (5 minutes) and 15 months (1 hour).
CREATE TABLE metric_rollups (
    cluster_id text NOT NULL,
    node_id    uuid NOT NULL,
    period_s   integer NOT NULL CHECK (period_s IN (300, 3600)),
    at         timestamptz NOT NULL,
    sums       real[] NOT NULL,
    mins       real[] NOT NULL,
    maxs       real[] NOT NULL,
    counts     integer[] NOT NULL,
    PRIMARY KEY (cluster_id, period_s, at, node_id)
);
CREATE INDEX metric_rollups_age ON metric_rollups (period_s, at);

-- How far each rollup has gone: samples before done_until are rolled up.
CREATE TABLE metric_rollup_marks (
    period_s   integer PRIMARY KEY,
    done_until timestamptz NOT NULL
);

-- (Re)compute the rollups of p seconds for the samples in [from_ts, to_ts)
-- (bucket-aligned), of the nodes on host only when host is given (late
-- samples an agent pushes after its periods were rolled up). Returns the
-- rows written.
CREATE FUNCTION metric_rollup_between(p integer, from_ts timestamptz, to_ts timestamptz,
                                      host uuid DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    INSERT INTO metric_rollups (cluster_id, node_id, period_s, at, sums, mins, maxs, counts)
    SELECT cluster_id, node_id, p, b, array_agg(s ORDER BY i), array_agg(mn ORDER BY i),
           array_agg(mx ORDER BY i), array_agg(c ORDER BY i)
    FROM (SELECT m.cluster_id, m.node_id, to_timestamp(floor(extract(epoch FROM m.at) / p) * p) b,
                 u.i, sum(u.v) s, min(u.v) mn, max(u.v) mx, count(u.v)::integer c
          FROM metric_samples m, unnest(m.vals) WITH ORDINALITY AS u(v, i)
          WHERE m.at >= from_ts AND m.at < to_ts
            AND (host IS NULL OR m.node_id IN (SELECT id FROM nodes WHERE host_id = host))
          GROUP BY 1, 2, 3, 4) x
    GROUP BY cluster_id, node_id, b
    ON CONFLICT (cluster_id, period_s, at, node_id) DO UPDATE
        SET sums = EXCLUDED.sums, mins = EXCLUDED.mins, maxs = EXCLUDED.maxs,
            counts = EXCLUDED.counts;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

-- Roll up the periods of p seconds that ended at least grace ago (samples
-- arrive a little after their period) and are not rolled up yet. Returns
-- the rows written.
CREATE FUNCTION metric_rollup(p integer, grace interval) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    from_ts timestamptz;
    to_ts   timestamptz := to_timestamp(floor(extract(epoch FROM now() - grace) / p) * p);
    n       integer;
BEGIN
    SELECT done_until INTO from_ts FROM metric_rollup_marks WHERE period_s = p FOR UPDATE;
    IF from_ts IS NULL THEN
        from_ts := coalesce(to_timestamp(floor(extract(epoch FROM
                       (SELECT min(at) FROM metric_samples)) / p) * p), to_ts);
        INSERT INTO metric_rollup_marks VALUES (p, from_ts) ON CONFLICT DO NOTHING;
    END IF;
    IF to_ts <= from_ts THEN
        RETURN 0;
    END IF;
    n := metric_rollup_between(p, from_ts, to_ts);
    UPDATE metric_rollup_marks SET done_until = to_ts WHERE period_s = p;
    RETURN n;
END $$;

-- Samples pushed for periods already rolled up: roll their buckets up again.
CREATE FUNCTION metric_rollup_late(host uuid, first_at timestamptz, last_at timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT period_s, done_until FROM metric_rollup_marks WHERE done_until > first_at LOOP
        PERFORM metric_rollup_between(r.period_s,
            to_timestamp(floor(extract(epoch FROM first_at) / r.period_s) * r.period_s),
            least(r.done_until, to_timestamp(floor(extract(epoch FROM last_at) / r.period_s)
                                             * r.period_s + r.period_s)), host);
    END LOOP;
END $$;

-- Compaction: a whole UTC day of 60-second samples, once over, moves into
-- one row per node and hour: its 60 minutes of every metric, metric by
-- metric (catalog position i's value of minute m at (i - 1) * 60 + m + 1,
-- NULL where there was none), so that neighbours are alike and PostgreSQL's
-- lz4 compresses them well; then the day's partition goes. Kept as long as
-- samples are.
CREATE TABLE metric_blocks (
    cluster_id text NOT NULL,
    node_id    uuid NOT NULL,
    hour       timestamptz NOT NULL,
    ncat       integer NOT NULL, -- catalog positions in vals (60 values each)
    vals       real[] NOT NULL,
    PRIMARY KEY (cluster_id, hour, node_id)
);
ALTER TABLE metric_blocks ALTER COLUMN vals SET STORAGE EXTENDED;
ALTER TABLE metric_blocks ALTER COLUMN vals SET COMPRESSION lz4;

-- Compact the UTC day d (ncat catalog positions) and drop its partition;
-- returns the blocks written, or -1 when there was no partition.
CREATE FUNCTION metric_compact_day(d date, ncat integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    part text := 'metric_samples_' || to_char(d, 'YYYYMMDD');
    from_ts timestamptz := d::timestamp AT TIME ZONE 'UTC';
    n integer;
BEGIN
    IF to_regclass(part) IS NULL THEN
        RETURN -1;
    END IF;
    INSERT INTO metric_blocks (cluster_id, node_id, hour, ncat, vals)
    SELECT k.cluster_id, k.node_id, k.h, ncat,
           (SELECT array_agg(s.vals[i] ORDER BY i, mi)
            FROM generate_series(0, 59) mi
            LEFT JOIN metric_samples s ON s.cluster_id = k.cluster_id
                 AND s.node_id = k.node_id AND s.at = k.h + make_interval(mins => mi)
                 AND s.period_s = 60 AND s.at >= from_ts AND s.at < from_ts + interval '1 day',
            generate_series(1, ncat) i)
    FROM (SELECT DISTINCT cluster_id, node_id, date_trunc('hour', at) AS h
          FROM metric_samples WHERE at >= from_ts AND at < from_ts + interval '1 day'
            AND period_s = 60) k
    ON CONFLICT (cluster_id, hour, node_id) DO UPDATE SET vals = EXCLUDED.vals,
        ncat = EXCLUDED.ncat;
    GET DIAGNOSTICS n = ROW_COUNT;
    -- Samples of other periods (shortened for tests) are not compacted.
    IF NOT EXISTS (SELECT 1 FROM metric_samples WHERE at >= from_ts
                   AND at < from_ts + interval '1 day' AND period_s <> 60) THEN
        EXECUTE format('DROP TABLE %I', part);
    ELSE
        DELETE FROM metric_samples WHERE at >= from_ts AND at < from_ts + interval '1 day'
            AND period_s = 60;
    END IF;
    RETURN n;
END $$;
