-- 0033_leadership: several cairnd share one database; the one holding the
-- leadership advisory lock runs the host monitor and makes the HA
-- decisions (controlplane/leader.h). Each takeover raises the term, and
-- every transaction in which the leader decides reads its term here FOR
-- SHARE first, so a former leader's late decision cannot land after the
-- next one took over (the takeover's UPDATE waits for it, or it finds the
-- term gone). The term is written with each decision's events and
-- operations.
CREATE TABLE leadership (
    id     int PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    term   bigint NOT NULL DEFAULT 0,
    holder text,
    since  timestamptz
);
INSERT INTO leadership DEFAULT VALUES;

-- Set by a fenced transaction (SET LOCAL); NULL elsewhere.
CREATE FUNCTION leader_term() RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT nullif(current_setting('cairn.leader_term', true), '')::bigint
$$;

ALTER TABLE events ADD COLUMN leader_term bigint DEFAULT leader_term();
ALTER TABLE operations ADD COLUMN leader_term bigint DEFAULT leader_term();
