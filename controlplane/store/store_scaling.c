/* store_scaling.c -- what scaling a cluster's shards keeps: the journal of
 * an operation's hash-slot moves (migration 0015), the slots a shard serves
 * as its primary last said, the shards scaling in removes, the end of a
 * scaling change, and cancel requests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "xalloc.h"

/* ---- the journal --------------------------------------------------------------- */

static const struct db_stmt count_moves = {
    "SELECT count(*) FROM slot_moves WHERE operation_id = $1::uuid"};

enum db_status store_slot_moves_count(struct db_conn *conn, const char *op_id, long long *count)
{
    const char *params[1] = {op_id};
    return store_get_int64(conn, &count_moves, 1, params, count);
}

static const struct db_stmt plan_moves = {
    "INSERT INTO slot_moves (operation_id, slot, from_shard, to_shard, keys_planned,"
    "  bytes_planned)"
    " SELECT $1::uuid, m.slot, m.from_shard, m.to_shard, m.keys, m.bytes"
    " FROM jsonb_to_recordset($2::jsonb)"
    "   AS m(slot int, from_shard int, to_shard int, keys bigint, bytes bigint)"
    " ON CONFLICT (operation_id, slot) DO NOTHING"};

enum db_status store_slot_moves_plan(struct db_conn *conn, const char *op_id, const char *moves)
{
    return store_exec(conn, &plan_moves, op_id, moves);
}

/* Those already begun first: they are finished before others start. */
static const struct db_stmt next_moves = {
    "SELECT slot, from_shard, to_shard, status = 'moving' FROM slot_moves"
    " WHERE operation_id = $1::uuid AND status <> 'moved'"
    " ORDER BY status = 'moving' DESC, slot LIMIT $2::int"};

static void read_move(const PGresult *res, int row, void *item)
{
    struct store_slot_move *m = item;
    m->slot = (int)db_int(res, row, 0);
    m->from = (int)db_int(res, row, 1);
    m->to = (int)db_int(res, row, 2);
    m->begun = db_bool(res, row, 3);
}

enum db_status store_slot_moves_next(struct db_conn *conn, const char *op_id,
                                     struct store_slot_move *out, size_t max, size_t *n)
{
    struct db_params p = {0};
    db_param_text(&p, op_id);
    db_param_int(&p, (int)max);
    return store_read_into(conn, &next_moves, &p, read_move, out, sizeof(*out), max, n);
}

static const struct db_stmt begin_moves = {
    "UPDATE slot_moves SET status = 'moving', started_at = coalesce(started_at, now())"
    " WHERE operation_id = $1::uuid AND status = 'pending'"
    "   AND slot IN (SELECT jsonb_array_elements_text($2::jsonb)::int)"};

enum db_status store_slot_moves_begin(struct db_conn *conn, const char *op_id, const char *slots)
{
    return store_exec(conn, &begin_moves, op_id, slots);
}

static const struct db_stmt moved = {
    "UPDATE slot_moves m SET status = 'moved', keys_moved = m.keys_moved + d.keys,"
    "  finished_at = now()"
    " FROM jsonb_to_recordset($2::jsonb) AS d(slot int, keys bigint)"
    " WHERE m.operation_id = $1::uuid AND m.slot = d.slot"};

enum db_status store_slot_moves_done(struct db_conn *conn, const char *op_id, const char *done)
{
    return store_exec(conn, &moved, op_id, done);
}

static const struct db_stmt moves_summary = {
    "SELECT json_build_object('slots_moved', count(*) FILTER (WHERE status = 'moved'),"
    "  'slots_left', count(*) FILTER (WHERE status <> 'moved'),"
    "  'keys_moved', coalesce(sum(keys_moved), 0),"
    "  'bytes_moved_estimate', coalesce(sum(bytes_planned) FILTER (WHERE status = 'moved'), 0),"
    "  'seconds', coalesce(round(extract(epoch FROM max(finished_at) - min(started_at))::numeric,"
    "    3), 0))"
    " FROM slot_moves WHERE operation_id = $1::uuid"};

enum db_status store_slot_moves_summary(struct db_conn *conn, const char *op_id, json_t **out)
{
    const char *params[1] = {op_id};
    return store_get_json(conn, &moves_summary, 1, params, out);
}

/* ---- shards -------------------------------------------------------------------- */

static const struct db_stmt set_slots = {
    "UPDATE shards SET slots = $3::int4range[]"
    " WHERE cluster_id = $1 AND index = $2::int AND removed_at IS NULL"};

enum db_status store_shard_set_slots(struct db_conn *conn, const char *cluster_id, int index,
                                     const char *ranges)
{
    struct db_params p = {0};
    db_param_text(&p, cluster_id);
    db_param_int(&p, index);
    db_param_text(&p, ranges);
    return db_exec_params(conn, &set_slots, &p);
}

static const struct db_stmt remove_nodes = {
    "UPDATE nodes n SET desired_state = 'deleted', updated_at = now() FROM shards s"
    " WHERE s.id = n.shard_id AND s.cluster_id = $1 AND s.index >= $2::int"
    "   AND s.removed_at IS NULL AND n.desired_state <> 'deleted'"};

static const struct db_stmt remove_shards = {
    "UPDATE shards SET removed_at = now(), slots = '{}'"
    " WHERE cluster_id = $1 AND index >= $2::int AND removed_at IS NULL"};

enum db_status store_shards_remove(struct db_conn *conn, const char *cluster_id, int first)
{
    struct db_params p = {0};
    db_param_text(&p, cluster_id);
    db_param_int(&p, first);
    enum db_status st = db_exec_params(conn, &remove_nodes, &p);
    return st == DB_OK ? db_exec_params(conn, &remove_shards, &p) : st;
}

/* ---- the change's end --------------------------------------------------------- */

static const struct db_stmt change_done = {
    "UPDATE clusters SET status = 'available', observed_generation = generation,"
    "  pending_changes = pending_changes - $2::text, updated_at = now() WHERE id = $1"};

enum db_status store_cluster_change_done(struct db_conn *conn, const char *id, const char *key)
{
    return store_exec(conn, &change_done, id, key);
}

static const struct db_stmt put_spec = {
    "UPDATE clusters SET spec = spec || jsonb_build_object($2::text, $3::jsonb),"
    "  generation = generation + 1, updated_at = now() WHERE id = $1"};

enum db_status store_cluster_spec_put(struct db_conn *conn, const char *id, const char *field,
                                      const char *value)
{
    struct db_params p = {0};
    db_param_text(&p, id);
    db_param_text(&p, field);
    db_param_text(&p, value);
    return db_exec_params(conn, &put_spec, &p);
}

/* ---- cancelling ------------------------------------------------------------------ */

static const struct db_stmt request_cancel = {
    "UPDATE operations SET cancel_requested_at = coalesce(cancel_requested_at, now()),"
    "  updated_at = now()"
    " WHERE id = $1::uuid AND status IN ('pending', 'running')"};

enum db_status store_operation_request_cancel(struct db_conn *conn, const char *op_id)
{
    return store_exec(conn, &request_cancel, op_id, NULL);
}

static const struct db_stmt cancel_requested = {
    "SELECT (cancel_requested_at IS NOT NULL)::int FROM operations WHERE id = $1::uuid"};

enum db_status store_operation_cancel_requested(struct db_conn *conn, const char *op_id,
                                                bool *requested)
{
    const char *params[1] = {op_id};
    long long v = 0;
    enum db_status st = store_get_int64(conn, &cancel_requested, 1, params, &v);
    *requested = v != 0;
    return st;
}

static const struct db_stmt operation_state = {
    "SELECT kind, status FROM operations WHERE id = $1::uuid FOR UPDATE"};

static void read_state(const PGresult *res, int row, void *item)
{
    struct store_operation_state *s = item;
    store_copy_text(s->kind, sizeof(s->kind), res, row, 0);
    store_copy_text(s->status, sizeof(s->status), res, row, 1);
}

enum db_status store_operation_state(struct db_conn *conn, const char *op_id,
                                     struct store_operation_state *out)
{
    struct db_params p = {0};
    db_param_text(&p, op_id);
    return store_read_row(conn, &operation_state, &p, read_state, out);
}
