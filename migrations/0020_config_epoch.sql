-- 0020_config_epoch: a cluster-mode node's configuration epoch, as its
-- agent reads it (CLUSTER INFO's cluster_my_epoch; a replica reports its
-- primary's) or as cairnd reads it from a replica it has just made take
-- over. Two nodes of a shard that both say they are its primary are told
-- apart by it: the engines give the slots to the higher epoch, so the
-- lower one's claim is stale -- an old primary back from a cut or a freeze
-- that has not yet heard of the takeover. cairnd records it a replica and
-- keeps its writes paused until it rejoins as one (ha.c). NULL: not known.
ALTER TABLE nodes ADD COLUMN config_epoch bigint;
