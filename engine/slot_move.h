/* slot_move.h -- moving one hash slot from one primary of a running
 * cluster to another, under traffic, with the commands Valkey 8.0 and
 * Redis 7.0 have (Valkey 9.0's atomic CLUSTER MIGRATESLOTS is not in the
 * engines Cairn ships):
 *
 *   target  CLUSTER SETSLOT s IMPORTING source   takes ASKING clients
 *   source  CLUSTER SETSLOT s MIGRATING target   sends clients of keys it
 *                                                 no longer has with -ASK
 *   source  GETKEYSINSLOT s n, MIGRATE ... REPLACE KEYS ...   until none
 *   target  CLUSTER SETSLOT s NODE target        the slot is the target's
 *   source  CLUSTER SETSLOT s NODE target        (refused while it holds keys)
 *
 * A key is always wholly on one side: MIGRATE restores it on the target
 * before it deletes it on the source, so no acknowledged write is lost.
 * REPLACE, because a key on both sides can only be the copy of an earlier
 * MIGRATE whose reply was lost (clients reach the target only for keys the
 * source does not have), and the source's copy is the live one.
 *
 * engine_slot_move() is safe to run again at any point of an earlier run
 * -- after a kill -9 of the caller, or on a slot some other tool left half
 * moved: a target that already owns the slot skips to finishing it on the
 * source; IMPORTING and MIGRATING set again are no-ops. So a move is
 * resumed, never guessed at. */
#ifndef CAIRN_ENGINE_SLOT_MOVE_H
#define CAIRN_ENGINE_SLOT_MOVE_H

#include <stdbool.h>
#include <stddef.h>

#include "cluster.h"
#include "resp.h"

/* One end of a move: a blocking connection the caller owns, how another
 * engine reaches it (MIGRATE's address and credentials) and its node id. */
struct engine_slot_end {
    struct resp_conn *conn;
    const struct resp_options *addr;
    const char *id; /* ENGINE_CLUSTER_ID_LEN hex digits */
};

struct engine_slot_move_opts {
    int batch_keys;         /* keys per MIGRATE, >= 1 */
    int timeout_ms;         /* MIGRATE's timeout for a batch */
    int big_key_timeout_ms; /* and for a key moved alone after its batch timed out */
};

/* What a move did; the counts add up over runs of the same move. */
struct engine_slot_moved {
    long long keys;     /* keys moved (MIGRATE's +NOKEY ones too: they are gone) */
    long long batches;  /* MIGRATE commands */
    long long big_keys; /* keys moved alone, with big_key_timeout_ms */
};

/* Move slot from from to to as above, adding to *moved. big_key_conn, when
 * not NULL, is a second connection to the source with a command timeout
 * above big_key_timeout_ms, for the keys moved alone (the source's own
 * connection gives up sooner); without it a batch that times out fails the
 * move. False with err (the engine's words, or "h:p: reason") when a
 * command fails; the slot is then left as it is, for a later run to finish. */
bool engine_slot_move(const struct engine_slot_end *from, const struct engine_slot_end *to,
                      struct resp_conn *big_key_conn, int slot,
                      const struct engine_slot_move_opts *opts, struct engine_slot_moved *moved,
                      char *err, size_t errsize);

#endif
