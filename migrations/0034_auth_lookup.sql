-- 0034_auth_lookup: the Sentinel-compatible listener finds the cluster an
-- AUTH password opens by a keyed hash of it (HMAC-SHA-256 under a key
-- derived from cairnd's secret key file, which the database never holds),
-- one indexed read, rather than by opening every cluster's sealed token
-- in turn. Written beside auth_secret and auth_secret_previous; rows
-- sealed before this migration get theirs from the first AUTH that finds
-- none (controlplane/sentinel/sentinel_commands.c).
ALTER TABLE clusters ADD COLUMN auth_lookup bytea, ADD COLUMN auth_lookup_previous bytea;
CREATE INDEX clusters_auth_lookup ON clusters (auth_lookup);
CREATE INDEX clusters_auth_lookup_previous ON clusters (auth_lookup_previous)
    WHERE auth_lookup_previous IS NOT NULL;
