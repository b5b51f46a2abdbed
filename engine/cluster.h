/* cluster.h -- a cluster's topology as one node sees it: CLUSTER NODES
 * (text), CLUSTER SLOTS and CLUSTER SHARDS (reply trees), parsed.
 *
 * Each parser fills a struct the caller owns and frees with the matching
 * *_free(), and is strict: the first malformed line or element fails the
 * whole parse with a message naming it, because topology decisions must
 * not rest on a partial view. Names the engines may add later (flags,
 * SHARDS keys, SLOTS metadata) are ignored rather than rejected. */
#ifndef CAIRN_ENGINE_CLUSTER_H
#define CAIRN_ENGINE_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#define ENGINE_CLUSTER_SLOTS  16384 /* slots 0..16383 */
#define ENGINE_CLUSTER_ID_LEN 40    /* node ids are 40 hex digits */

/* Whether the n bytes at s are a node id: ENGINE_CLUSTER_ID_LEN hex digits. */
bool engine_cluster_id_valid(const char *s, size_t n);

/* CLUSTER NODES flags, as bits. */
enum engine_cluster_flag {
    ENGINE_CLUSTER_MYSELF = 1 << 0,     /* "myself": the node that answered */
    ENGINE_CLUSTER_PRIMARY = 1 << 1,    /* "master" */
    ENGINE_CLUSTER_REPLICA = 1 << 2,    /* "slave" */
    ENGINE_CLUSTER_PFAIL = 1 << 3,      /* "fail?": unreachable in this node's view */
    ENGINE_CLUSTER_FAIL = 1 << 4,       /* "fail": failure agreed by a majority */
    ENGINE_CLUSTER_HANDSHAKE = 1 << 5,  /* "handshake": not yet trusted */
    ENGINE_CLUSTER_NOADDR = 1 << 6,     /* "noaddr": address unknown */
    ENGINE_CLUSTER_NOFAILOVER = 1 << 7, /* "nofailover": replica will not fail over */
};

/* A slot range, both ends inclusive; a single slot has start == end. */
struct engine_cluster_range {
    int start;
    int end;
};

/* A slot half-way through a move, as "[slot->-id]" (migrating, on the
 * source) or "[slot-<-id]" (importing, on the target). */
struct engine_cluster_migration {
    int slot;
    bool importing;                       /* false: migrating */
    char peer[ENGINE_CLUSTER_ID_LEN + 1]; /* the other end's node id */
};

/* One line of CLUSTER NODES:
 * <id> <ip:port@cport[,hostname]> <flags> <primary|-> <ping-sent> <pong-recv>
 * <config-epoch> <link-state> <slot>... */
struct engine_cluster_node {
    char id[ENGINE_CLUSTER_ID_LEN + 1];
    char *ip; /* "" when the node has no known address (noaddr, or alone and never met) */
    int port;
    int cport;      /* cluster bus port */
    char *hostname; /* NULL unless announced (cluster-announce-hostname) */
    unsigned flags; /* enum engine_cluster_flag bits; 0 for "noflags" */
    char primary_id[ENGINE_CLUSTER_ID_LEN + 1]; /* "" for "-" */
    long long ping_sent; /* ms since the epoch of the pending PING, 0 for none */
    long long pong_recv; /* ms since the epoch of the last PONG (myself: 0 on Valkey 8) */
    long long config_epoch;
    bool connected;                      /* link-state "connected" (false: "disconnected") */
    struct engine_cluster_range *ranges; /* slots served, in line order */
    size_t nranges;
    struct engine_cluster_migration *migrations; /* only on the node's own (myself) line */
    size_t nmigrations;
};

struct engine_cluster_nodes {
    struct engine_cluster_node *nodes; /* in reply order */
    size_t count;
};

/* Parse len bytes of CLUSTER NODES text (LF or CRLF; blank lines
 * skipped) into *out, zeroed first. IPv6 addresses are written without
 * brackets, so the port follows the last ':' before '@'. Returns true, or
 * false with "CLUSTER NODES line N: ..." in err and *out left empty. Free
 * with engine_cluster_nodes_free(). */
bool engine_cluster_nodes_parse(const char *text, size_t len, struct engine_cluster_nodes *out,
                                char *err, size_t errsize);

/* Free what engine_cluster_nodes_parse() stored in nodes and zero it. */
void engine_cluster_nodes_free(struct engine_cluster_nodes *nodes);

/* The node flagged myself, or NULL. */
const struct engine_cluster_node *
engine_cluster_nodes_myself(const struct engine_cluster_nodes *nodes);

/* The node with this id, or NULL. Linear: topology lists are small. */
const struct engine_cluster_node *
engine_cluster_nodes_find(const struct engine_cluster_nodes *nodes, const char *id);

/* How many slots the node serves (migrating slots it still owns included). */
int engine_cluster_node_slot_count(const struct engine_cluster_node *node);

/* A node as CLUSTER SLOTS lists it. */
struct engine_cluster_endpoint {
    char *endpoint; /* preferred endpoint: IP by default, hostname or "?"; NULL if nil */
    int port;
    char id[ENGINE_CLUSTER_ID_LEN + 1];
    char *ip;       /* from the metadata, NULL unless sent (when the endpoint is not the IP) */
    char *hostname; /* from the metadata, NULL unless announced */
};

/* One CLUSTER SLOTS entry: a slot range and who serves it, primary first. */
struct engine_cluster_slot_entry {
    struct engine_cluster_range range;
    struct engine_cluster_endpoint *nodes; /* nodes[0] is the primary; at least one */
    size_t nnodes;
};

struct engine_cluster_slots {
    struct engine_cluster_slot_entry *entries; /* in reply order */
    size_t count;
};

/* Parse a CLUSTER SLOTS reply into *out, zeroed first. Returns true, or
 * false with "CLUSTER SLOTS: ..." in err (the engine's text for an error
 * reply) and *out left empty. Free with engine_cluster_slots_free(). */
bool engine_cluster_slots_parse(const redisReply *reply, struct engine_cluster_slots *out,
                                char *err, size_t errsize);

/* Free what engine_cluster_slots_parse() stored in slots and zero it. */
void engine_cluster_slots_free(struct engine_cluster_slots *slots);

/* A node's "health" in CLUSTER SHARDS. */
enum engine_cluster_health {
    ENGINE_CLUSTER_HEALTH_UNKNOWN, /* a value this parser does not know */
    ENGINE_CLUSTER_HEALTH_ONLINE,  /* "online" */
    ENGINE_CLUSTER_HEALTH_FAIL,    /* "fail" */
    ENGINE_CLUSTER_HEALTH_LOADING, /* "loading": a replica whose known offset is 0 */
};

struct engine_cluster_shard_node {
    char id[ENGINE_CLUSTER_ID_LEN + 1];
    int port;     /* 0 when only a TLS port is served */
    int tls_port; /* 0 when absent */
    char *ip;
    char *endpoint; /* NULL if nil */
    char *hostname; /* NULL unless announced */
    bool primary;   /* role "master" (false: "replica") */
    long long replication_offset;
    enum engine_cluster_health health;
};

/* One CLUSTER SHARDS entry. A shard can own no slots (Redis 7.0 lists a
 * failed ex-primary as its own slot-less shard) and can hold two primaries
 * (Valkey 8.0 keeps the failed ex-primary, still role "master", in the shard
 * of the replica that replaced it): use engine_cluster_shard_primary(). */
struct engine_cluster_shard {
    struct engine_cluster_range *ranges;
    size_t nranges;
    struct engine_cluster_shard_node *nodes;
    size_t nnodes;
};

struct engine_cluster_shards {
    struct engine_cluster_shard *shards; /* in reply order */
    size_t count;
};

/* Parse a CLUSTER SHARDS reply (RESP2 arrays of alternating keys and
 * values, or RESP3 maps) into *out, zeroed first. Required node keys: id,
 * port or tls-port, ip, endpoint, role, replication-offset, health. Returns
 * true, or false with "CLUSTER SHARDS: ..." in err and *out left empty.
 * Free with engine_cluster_shards_free(). */
bool engine_cluster_shards_parse(const redisReply *reply, struct engine_cluster_shards *out,
                                 char *err, size_t errsize);

/* Free what engine_cluster_shards_parse() stored in shards and zero it. */
void engine_cluster_shards_free(struct engine_cluster_shards *shards);

/* The shard's serving primary: the first node with role master whose
 * health is not fail; NULL when there is none. */
const struct engine_cluster_shard_node *
engine_cluster_shard_primary(const struct engine_cluster_shard *shard);

/* "online", "fail", "loading" or "unknown". */
const char *engine_cluster_health_name(enum engine_cluster_health health);

/* nodes.conf, the engines' own record of the cluster, as it is loaded at
 * start: Valkey 8.0 refuses to start (corrupted cluster config file) when a
 * replica's line carries another shard id than its primary's, which a node
 * killed soon after its cluster formed or failed over can leave behind. A
 * replica always belongs to its primary's shard (newer engines load it so),
 * so its line is given the primary's shard id. Returns a healed copy of the
 * len bytes at text (caller frees) with *healed the lines changed, or NULL
 * when no line needs it. */
char *engine_nodes_conf_heal(const char *text, size_t len, size_t *healed);

/* The hash slot of key[0..len), as a cluster-mode engine computes it:
 * CRC16 (XMODEM) of the key, or of its hash tag -- what lies between the
 * first '{' and the next '}' when that is not empty -- modulo 16384. */
int engine_key_slot(const void *key, size_t len);

#endif
