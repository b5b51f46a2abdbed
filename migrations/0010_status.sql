-- 0010_status: one word for one idea. Hosts and operations have a status, as
-- clusters and nodes do; host events are named like every other event, in
-- CamelCase as ElastiCache's read (HostLost, not host.lost).
ALTER TABLE hosts RENAME COLUMN state TO status;
ALTER TABLE hosts RENAME CONSTRAINT hosts_state_check TO hosts_status_check;
ALTER TABLE operations RENAME COLUMN state TO status;
ALTER TABLE operations RENAME CONSTRAINT operations_state_check TO operations_status_check;
ALTER INDEX operations_cluster_state RENAME TO operations_cluster_status;

UPDATE events SET type = CASE type
        WHEN 'host.registered' THEN 'HostRegistered'
        WHEN 'host.reregistered' THEN 'HostReregistered'
        WHEN 'host.recovered' THEN 'HostRecovered'
        WHEN 'host.lost' THEN 'HostLost'
    END
    WHERE type IN ('host.registered', 'host.reregistered', 'host.recovered', 'host.lost');
