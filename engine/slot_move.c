/* slot_move.c -- see slot_move.h. */
#include "slot_move.h"

#include <stdio.h>
#include <string.h>

#include "topology.h"

/* The engines' words for a slot that is already where it is going: the
 * target owns it (IMPORTING refused), or the source gave it away already
 * (MIGRATING refused). Both Valkey 8.0 and Redis 7.0 say so this way. */
static bool owner_already(const char *err)
{
    return strstr(err, "already the owner") != NULL;
}

static bool not_owner(const char *err)
{
    return strstr(err, "not the owner") != NULL;
}

/* Move one batch; a batch that timed out is tried again key by key on
 * big_key_conn with the longer timeout. */
static bool migrate_batch(const struct engine_slot_end *from, const struct engine_slot_end *to,
                          struct resp_conn *big_key_conn, const struct engine_keys *keys,
                          const struct engine_slot_move_opts *opts, struct engine_slot_moved *moved,
                          char *err, size_t errsize)
{
    struct resp_options addr = *to->addr;
    addr.command_timeout_ms = opts->timeout_ms;
    moved->batches++;
    if (engine_migrate(from->conn, &addr, keys, err, errsize)) {
        moved->keys += (long long)keys->count;
        return true;
    }
    /* The engine says IOERR when the target stayed silent for the timeout
     * (one key too big to restore in time); anything else is no size issue. */
    if (big_key_conn == NULL || strstr(err, "IOERR") == NULL)
        return false;
    addr.command_timeout_ms = opts->big_key_timeout_ms;
    for (size_t i = 0; i < keys->count; i++) {
        struct engine_keys one = {&keys->keys[i], &keys->lens[i], 1};
        moved->batches++;
        if (!engine_migrate(big_key_conn, &addr, &one, err, errsize))
            return false;
        moved->keys++;
        moved->big_keys++;
    }
    return true;
}

bool engine_slot_move(const struct engine_slot_end *from, const struct engine_slot_end *to,
                      struct resp_conn *big_key_conn, int slot,
                      const struct engine_slot_move_opts *opts, struct engine_slot_moved *moved,
                      char *err, size_t errsize)
{
    bool owned = false; /* the target owns the slot already: finish on the source */

    if (!engine_cluster_setslot(to->conn, slot, ENGINE_SETSLOT_IMPORTING, from->id, err, errsize)) {
        if (!owner_already(err))
            return false;
        owned = true;
    }
    if (!owned &&
        !engine_cluster_setslot(from->conn, slot, ENGINE_SETSLOT_MIGRATING, to->id, err, errsize)) {
        if (!not_owner(err))
            return false;
        /* Neither end owns it (the target would have said so above): a
         * third node serves it, and taking it from there is no move of
         * ours. The target stops importing. */
        char why[256];
        snprintf(why, sizeof(why), "%s", err);
        (void)engine_cluster_setslot(to->conn, slot, ENGINE_SETSLOT_STABLE, NULL, err, errsize);
        snprintf(err, errsize, "slot %d is served by neither end of its move (%s)", slot, why);
        return false;
    }
    while (!owned) {
        struct engine_keys keys = {0};
        if (!engine_cluster_getkeysinslot(from->conn, slot, opts->batch_keys, &keys, err, errsize))
            return false;
        bool empty = keys.count == 0;
        bool ok = empty || migrate_batch(from, to, big_key_conn, &keys, opts, moved, err, errsize);
        engine_keys_free(&keys);
        if (!ok)
            return false;
        if (empty)
            break;
    }
    /* The target first: once the source lets go, clients must find it. */
    return engine_cluster_setslot(to->conn, slot, ENGINE_SETSLOT_NODE, to->id, err, errsize) &&
           engine_cluster_setslot(from->conn, slot, ENGINE_SETSLOT_NODE, to->id, err, errsize);
}
