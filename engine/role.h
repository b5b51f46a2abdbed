/* role.h -- the ROLE reply, parsed: is this engine a primary (and who
 * replicates from it), a replica (of whom, how far along), or a sentinel.
 *
 * Roles are always read from the engine, never assumed; this is the parser
 * cairnd and the agent share. Engines say "master" and "slave"; Cairn says
 * primary and replica. */
#ifndef CAIRN_ENGINE_ROLE_H
#define CAIRN_ENGINE_ROLE_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

enum engine_role_kind {
    ENGINE_ROLE_PRIMARY,
    ENGINE_ROLE_REPLICA,
    ENGINE_ROLE_SENTINEL,
};

/* A replica's link to its primary, as ROLE names it. */
enum engine_role_state {
    ENGINE_ROLE_STATE_UNKNOWN,    /* a name this parser does not know */
    ENGINE_ROLE_STATE_NONE,       /* "none": replication not configured */
    ENGINE_ROLE_STATE_CONNECT,    /* "connect": must connect (link down, retrying) */
    ENGINE_ROLE_STATE_CONNECTING, /* "connecting": TCP connect in progress */
    ENGINE_ROLE_STATE_HANDSHAKE,  /* "handshake": PING/AUTH/REPLCONF exchange */
    ENGINE_ROLE_STATE_SYNC,       /* "sync": receiving the snapshot (full sync) */
    ENGINE_ROLE_STATE_CONNECTED,  /* "connected": streaming, up to date */
};

struct engine_role_replica {
    char *host;
    int port;
    long long offset; /* replication offset the replica acknowledged */
};

struct engine_role {
    enum engine_role_kind kind;
    /* Primary: its replication offset. Replica: the offset it has processed
     * from its primary, -1 when it has none yet. Sentinel: 0. */
    long long offset;

    /* Primary only: its connected replicas, in reply order. */
    struct engine_role_replica *replicas;
    size_t nreplicas;

    /* Replica only. */
    char *primary_host;
    int primary_port;
    enum engine_role_state state;

    /* Sentinel only: names of the monitored primaries. */
    char **masters;
    size_t nmasters;
};

/* Parse a ROLE reply into *out (zeroed first). Accepts "master", "slave"
 * or "replica", and "sentinel". Returns true on success; the caller
 * releases *out with engine_role_free(). Returns false with a message in
 * err when reply is an error reply ("ROLE: " + the engine's text) or is not
 * shaped like ROLE's (wrong types, counts, out-of-range port); *out is then
 * left empty and need not be freed. An unknown replica state is not an
 * error: it parses as ENGINE_ROLE_STATE_UNKNOWN. */
bool engine_role_parse(const redisReply *reply, struct engine_role *out, char *err, size_t errsize);

/* Free what engine_role_parse() stored in role and zero it; the struct
 * itself is the caller's. */
void engine_role_free(struct engine_role *role);

/* The name ROLE uses for a state ("connected"), "unknown" for UNKNOWN. */
const char *engine_role_state_name(enum engine_role_state state);

/* "primary", "replica" or "sentinel". */
const char *engine_role_kind_name(enum engine_role_kind kind);

#endif
