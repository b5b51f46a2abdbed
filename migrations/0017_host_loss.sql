-- 0017_host_loss: why a host is lost. A host whose agent misses its
-- heartbeats is lost ('heartbeat'): cairnd can no longer manage it, but
-- its engines may well be serving (a dead or paused agent), so its
-- primaries are not failed over on that alone. They are once the
-- replicas' agents and cairnd find the engines silent too ('vantage'),
-- the same judgement that loses a frozen host within a second. NULL while
-- the host is healthy.
ALTER TABLE hosts ADD COLUMN lost_reason text CHECK (lost_reason IN ('heartbeat', 'vantage'));
UPDATE hosts SET lost_reason = 'heartbeat' WHERE status = 'lost';
