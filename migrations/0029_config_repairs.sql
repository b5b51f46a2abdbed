-- 0029_config_repairs: two more kinds of repair an agent counts in its
-- reports, kept as 0022_engine_users.sql keeps the others: guarded engine
-- settings put back (EngineConfigRepaired), and engines restarted because
-- they refused Cairn's own login (EngineLoginRepaired).
ALTER TABLE nodes ADD COLUMN config_repairs integer NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN login_repairs integer NOT NULL DEFAULT 0;
