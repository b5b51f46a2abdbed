-- 0002_catalog: node types with the shapes and on-demand prices users know
-- from ElastiCache, and the engine lines with their upgrade paths.
-- Valkey is priced 20% below Redis OSS on the same node type.

INSERT INTO node_types (name, family, size, sort_order, vcpus, memory_gib,
                        network_baseline_gbps, network_burst_gbps, burstable,
                        price_redis_usd_hour, price_valkey_usd_hour)
SELECT 'cache.' || family || '.' || size, family, size, sort_order, vcpus, memory_gib,
       baseline, burst, family = 't3', redis, round(redis * 0.8, 4)
FROM (VALUES
    ('t3',  'micro',    101,  2,   0.50,  0.064,  5.0, 0.017),
    ('t3',  'small',    102,  2,   1.37,  0.128,  5.0, 0.034),
    ('t3',  'medium',   103,  2,   3.09,  0.256,  5.0, 0.068),
    ('m5',  'large',    210,  2,   6.38,  0.750, 10.0, 0.156),
    ('m5',  'xlarge',   211,  4,  12.94,  1.250, 10.0, 0.311),
    ('m5',  '2xlarge',  212,  8,  26.05,  2.500, 10.0, 0.623),
    ('m5',  '4xlarge',  214, 16,  52.26,  5.000, 10.0, 1.245),
    ('m5',  '12xlarge', 222, 48, 157.13, 10.000, 10.0, 3.744),
    ('m5',  '24xlarge', 234, 96, 314.32, 25.000, 25.0, 7.488),
    ('r5',  'large',    310,  2,  13.07,  0.750, 10.0, 0.216),
    ('r5',  'xlarge',   311,  4,  26.32,  1.250, 10.0, 0.431),
    ('r5',  '2xlarge',  312,  8,  52.82,  2.500, 10.0, 0.862),
    ('r5',  '4xlarge',  314, 16, 105.81,  5.000, 10.0, 1.724),
    ('r5',  '12xlarge', 322, 48, 317.77, 10.000, 10.0, 5.184),
    ('r5',  '24xlarge', 334, 96, 635.61, 25.000, 25.0, 10.368),
    ('r6g', 'large',    410,  2,  13.07,  0.750, 10.0, 0.206),
    ('r6g', 'xlarge',   411,  4,  26.32,  1.250, 10.0, 0.411),
    ('r6g', '2xlarge',  412,  8,  52.82,  2.500, 10.0, 0.821),
    ('r6g', '4xlarge',  414, 16, 105.81,  5.000, 10.0, 1.642),
    ('r6g', '8xlarge',  418, 32, 209.55, 12.000, 12.0, 3.284),
    ('r6g', '12xlarge', 422, 48, 317.77, 20.000, 20.0, 4.925),
    ('r6g', '16xlarge', 426, 64, 419.09, 25.000, 25.0, 6.567),
    ('r7g', 'large',    510,  2,  13.07,  0.937, 12.5, 0.219),
    ('r7g', 'xlarge',   511,  4,  26.32,  1.876, 12.5, 0.437),
    ('r7g', '2xlarge',  512,  8,  52.82,  3.750, 15.0, 0.873),
    ('r7g', '4xlarge',  514, 16, 105.81,  7.500, 15.0, 1.745),
    ('r7g', '8xlarge',  518, 32, 209.55, 15.000, 15.0, 3.491),
    ('r7g', '12xlarge', 522, 48, 317.77, 22.500, 22.5, 5.235),
    ('r7g', '16xlarge', 526, 64, 419.09, 30.000, 30.0, 6.981)
) AS t (family, size, sort_order, vcpus, memory_gib, baseline, burst, redis);

INSERT INTO engine_versions (engine, version, release_order) VALUES
    ('redis',  '7.0', 10),
    ('valkey', '7.2', 20),
    ('valkey', '8.0', 30),
    ('valkey', '8.1', 40),
    ('valkey', '9.0', 50);

-- Never a downgrade. Redis 7.0 moves to Valkey 7.2 or 8.0 (Valkey 7.2 is
-- wire- and data-compatible with Redis 7.2); any Valkey line moves to any
-- newer Valkey line.
INSERT INTO engine_upgrade_paths (from_engine, from_version, to_engine, to_version) VALUES
    ('redis', '7.0', 'valkey', '7.2'),
    ('redis', '7.0', 'valkey', '8.0');
INSERT INTO engine_upgrade_paths (from_engine, from_version, to_engine, to_version)
SELECT a.engine, a.version, b.engine, b.version
FROM engine_versions a JOIN engine_versions b
  ON a.engine = 'valkey' AND b.engine = 'valkey' AND b.release_order > a.release_order;
