/* topology.c -- the commands that form, repair and reshape a cluster, one
 * function each, and the readers of their replies. */
#include "topology.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"
#include "xalloc.h"

/* ---- running a command --------------------------------------------------- */

/* Takes a command's reply into out. False when the reply is not what the
 * command answers, with why set when there is more to say than that (a
 * parser's message). */
typedef bool reply_reader(const redisReply *reply, void *out, char *why, size_t whysize);

/* The length of a command's name in its format: the words before the first
 * argument ("CLUSTER MEET" of "CLUSTER MEET %s %d"). */
static int name_len(const char *fmt)
{
    size_t n = strcspn(fmt, "%");
    while (n > 0 && fmt[n - 1] == ' ')
        n--;
    return (int)n;
}

/* Run the command fmt formats (hiredis) and take its reply with take, or,
 * with take NULL, require +OK. A reply not taken fails the command (see
 * resp_fail_reply()) with why, or as an "unexpected reply to" its name. */
static bool vrun(struct resp_conn *c, reply_reader *take, void *out, char *err, size_t errsize,
                 const char *fmt, va_list ap)
{
    char why[256] = "";
    redisReply *r = resp_vcommand(c, err, errsize, fmt, ap);
    bool ok = r != NULL && (take != NULL ? take(r, out, why, sizeof(why)) : engine_reply_ok(r));

    if (r != NULL && !ok && why[0] != '\0')
        resp_fail_reply(c, err, errsize, "%s", why);
    else if (r != NULL && !ok)
        resp_fail_reply(c, err, errsize, "unexpected reply to %.*s", name_len(fmt), fmt);
    resp_reply_free(r);
    return ok;
}

/* A command that changes state: true when it answers +OK. */
static bool run_ok(struct resp_conn *c, char *err, size_t errsize, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool run_ok(struct resp_conn *c, char *err, size_t errsize, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    bool ok = vrun(c, NULL, NULL, err, errsize, fmt, ap);
    va_end(ap);
    return ok;
}

/* A command that reads: true when take takes its reply into out. */
static bool run_read(struct resp_conn *c, reply_reader *take, void *out, char *err, size_t errsize,
                     const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static bool run_read(struct resp_conn *c, reply_reader *take, void *out, char *err, size_t errsize,
                     const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    bool ok = vrun(c, take, out, err, errsize, fmt, ap);
    va_end(ap);
    return ok;
}

/* ---- forming a cluster --------------------------------------------------- */

bool engine_cluster_meet(struct resp_conn *c, const char *ip, int port, char *err, size_t errsize)
{
    return run_ok(c, err, errsize, "CLUSTER MEET %s %d", ip, port);
}

bool engine_cluster_addslotsrange(struct resp_conn *c, int first, int last, char *err,
                                  size_t errsize)
{
    return run_ok(c, err, errsize, "CLUSTER ADDSLOTSRANGE %d %d", first, last);
}

bool engine_cluster_replicate(struct resp_conn *c, const char *node_id, char *err, size_t errsize)
{
    return run_ok(c, err, errsize, "CLUSTER REPLICATE %s", node_id);
}

bool engine_cluster_forget(struct resp_conn *c, const char *node_id, char *err, size_t errsize)
{
    return run_ok(c, err, errsize, "CLUSTER FORGET %s", node_id);
}

static const char *const failover_modes[] = {
    [ENGINE_FAILOVER_DEFAULT] = "DEFAULT",
    [ENGINE_FAILOVER_FORCE] = "FORCE",
    [ENGINE_FAILOVER_TAKEOVER] = "TAKEOVER",
};

const char *engine_failover_mode_name(enum engine_failover_mode mode)
{
    assert((size_t)mode < sizeof(failover_modes) / sizeof(failover_modes[0]));
    return failover_modes[mode];
}

/* The default mode has no word of its own: CLUSTER FAILOVER alone. */
bool engine_cluster_failover(struct resp_conn *c, enum engine_failover_mode mode, char *err,
                             size_t errsize)
{
    if (mode == ENGINE_FAILOVER_DEFAULT)
        return run_ok(c, err, errsize, "CLUSTER FAILOVER");
    return run_ok(c, err, errsize, "CLUSTER FAILOVER %s", engine_failover_mode_name(mode));
}

/* ---- reading a node's view ----------------------------------------------- */

static bool read_nodes(const redisReply *reply, void *view, char *why, size_t whysize)
{
    return resp_reply_is_string(reply) &&
           engine_cluster_nodes_parse(reply->str, reply->len, view, why, whysize);
}

bool engine_cluster_nodes(struct resp_conn *c, struct engine_cluster_nodes *out, char *err,
                          size_t errsize)
{
    memset(out, 0, sizeof(*out));
    return run_read(c, read_nodes, out, err, errsize, "CLUSTER NODES");
}

static bool read_info_state(const redisReply *reply, void *ok, char *why, size_t whysize)
{
    (void)why;
    (void)whysize;
    return resp_reply_is_string(reply) &&
           engine_cluster_info_state_parse(reply->str, reply->len, ok);
}

bool engine_cluster_info_state(struct resp_conn *c, bool *ok, char *err, size_t errsize)
{
    return run_read(c, read_info_state, ok, err, errsize, "CLUSTER INFO");
}

static bool read_myid(const redisReply *reply, void *id, char *why, size_t whysize)
{
    (void)why;
    (void)whysize;
    return engine_cluster_myid_parse(reply, id);
}

bool engine_cluster_myid(struct resp_conn *c, char id[ENGINE_CLUSTER_ID_LEN + 1], char *err,
                         size_t errsize)
{
    return run_read(c, read_myid, id, err, errsize, "CLUSTER MYID");
}

static bool read_epoch(const redisReply *reply, void *epoch, char *why, size_t whysize)
{
    (void)why;
    (void)whysize;
    return resp_reply_is_string(reply) &&
           engine_cluster_info_epoch_parse(reply->str, reply->len, epoch);
}

bool engine_cluster_epoch(struct resp_conn *c, long long *epoch, char *err, size_t errsize)
{
    return run_read(c, read_epoch, epoch, err, errsize, "CLUSTER INFO");
}

static bool read_slot_stats(const redisReply *reply, void *stats, char *why, size_t whysize)
{
    (void)why;
    (void)whysize;
    return engine_slot_stats_parse(reply, stats);
}

bool engine_cluster_slot_stats(struct resp_conn *c, int first, int last,
                               struct engine_slot_stats *out, char *err, size_t errsize)
{
    memset(out, 0, sizeof(*out));
    return run_read(c, read_slot_stats, out, err, errsize, "CLUSTER SLOT-STATS SLOTSRANGE %d %d",
                    first, last);
}

void engine_slot_stats_free(struct engine_slot_stats *stats)
{
    free(stats->stats);
    memset(stats, 0, sizeof(*stats));
}

/* ---- moving a slot ------------------------------------------------------- */

static const char *const setslot_words[] = {
    [ENGINE_SETSLOT_IMPORTING] = "IMPORTING",
    [ENGINE_SETSLOT_MIGRATING] = "MIGRATING",
    [ENGINE_SETSLOT_NODE] = "NODE",
    [ENGINE_SETSLOT_STABLE] = "STABLE",
};

bool engine_cluster_setslot(struct resp_conn *c, int slot, enum engine_setslot how,
                            const char *node_id, char *err, size_t errsize)
{
    assert((size_t)how < sizeof(setslot_words) / sizeof(setslot_words[0]));
    assert((how == ENGINE_SETSLOT_STABLE) == (node_id == NULL));
    if (node_id == NULL)
        return run_ok(c, err, errsize, "CLUSTER SETSLOT %d %s", slot, setslot_words[how]);
    return run_ok(c, err, errsize, "CLUSTER SETSLOT %d %s %s", slot, setslot_words[how], node_id);
}

static bool read_count(const redisReply *reply, void *count, char *why, size_t whysize)
{
    (void)why;
    (void)whysize;
    if (reply->type != REDIS_REPLY_INTEGER || reply->integer < 0)
        return false;
    *(long long *)count = reply->integer;
    return true;
}

bool engine_cluster_countkeysinslot(struct resp_conn *c, int slot, long long *count, char *err,
                                    size_t errsize)
{
    return run_read(c, read_count, count, err, errsize, "CLUSTER COUNTKEYSINSLOT %d", slot);
}

static bool read_keys(const redisReply *reply, void *keys, char *why, size_t whysize)
{
    (void)why;
    (void)whysize;
    return engine_keys_parse(reply, keys);
}

bool engine_cluster_getkeysinslot(struct resp_conn *c, int slot, int count, struct engine_keys *out,
                                  char *err, size_t errsize)
{
    memset(out, 0, sizeof(*out));
    return run_read(c, read_keys, out, err, errsize, "CLUSTER GETKEYSINSLOT %d %d", slot, count);
}

void engine_keys_free(struct engine_keys *keys)
{
    for (size_t i = 0; i < keys->count; i++)
        free(keys->keys[i]);
    free(keys->keys);
    free(keys->lens);
    memset(keys, 0, sizeof(*keys));
}

/* A command's words, for resp_command_argv(). */
struct words {
    const char **argv;
    size_t *lens;
    int argc;
};

static void add_word(struct words *w, const char *s, size_t len)
{
    w->argv[w->argc] = s;
    w->lens[w->argc++] = len;
}

static void add_str(struct words *w, const char *s)
{
    add_word(w, s, strlen(s));
}

bool engine_migrate(struct resp_conn *c, const struct resp_options *to,
                    const struct engine_keys *keys, char *err, size_t errsize)
{
    char port[16], timeout[16];
    size_t max = 11 + keys->count; /* MIGRATE h p "" 0 t REPLACE AUTH2 u p KEYS, keys */
    struct words w = {xcalloc(max, sizeof(*w.argv)), xcalloc(max, sizeof(*w.lens)), 0};

    assert(keys->count > 0);
    snprintf(port, sizeof(port), "%d", to->port);
    snprintf(timeout, sizeof(timeout), "%d",
             to->command_timeout_ms > 0 ? to->command_timeout_ms : RESP_DEFAULT_TIMEOUT_MS);
    add_str(&w, "MIGRATE");
    add_str(&w, to->host);
    add_str(&w, port);
    add_str(&w, "");  /* no single key: they follow KEYS */
    add_str(&w, "0"); /* database 0, a cluster's only one */
    add_str(&w, timeout);
    add_str(&w, "REPLACE"); /* the source's copy is the live one: see slot_move.h */
    if (to->password != NULL) {
        add_str(&w, to->username != NULL ? "AUTH2" : "AUTH");
        if (to->username != NULL)
            add_str(&w, to->username);
        add_str(&w, to->password);
    }
    add_str(&w, "KEYS");
    for (size_t i = 0; i < keys->count; i++)
        add_word(&w, keys->keys[i], keys->lens[i]);

    redisReply *r = resp_command_argv(c, w.argc, w.argv, w.lens, err, errsize);
    bool ok = r != NULL && (engine_reply_ok(r) ||
                            (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "NOKEY") == 0));
    if (r != NULL && !ok)
        resp_fail_reply(c, err, errsize, "unexpected reply to MIGRATE");
    resp_reply_free(r);
    free(w.argv);
    free(w.lens);
    return ok;
}

/* ---- replication (cluster mode disabled) --------------------------------- */

bool engine_replicaof(struct resp_conn *c, const char *host, int port, char *err, size_t errsize)
{
    return run_ok(c, err, errsize, "REPLICAOF %s %d", host, port);
}

bool engine_replicaof_no_one(struct resp_conn *c, char *err, size_t errsize)
{
    return run_ok(c, err, errsize, "REPLICAOF NO ONE");
}

bool engine_failover_to(struct resp_conn *c, const char *host, int port, int timeout_ms, char *err,
                        size_t errsize)
{
    return run_ok(c, err, errsize, "FAILOVER TO %s %d TIMEOUT %d", host, port, timeout_ms);
}

bool engine_replconf_getack(struct resp_conn *c, char *err, size_t errsize)
{
    int flushed = 0;

    if (!resp_append(c, err, errsize, "REPLCONF GETACK *"))
        return false;
    while ((flushed = resp_flush(c, err, errsize)) == 0)
        ;
    return flushed == 1;
}

/* ---- fencing ------------------------------------------------------------- */

bool engine_pause_writes(struct resp_conn *c, int ms, char *err, size_t errsize)
{
    return run_ok(c, err, errsize, "CLIENT PAUSE %d WRITE", ms);
}

bool engine_unpause(struct resp_conn *c, char *err, size_t errsize)
{
    return run_ok(c, err, errsize, "CLIENT UNPAUSE");
}

/* ---- parameters ---------------------------------------------------------- */

bool engine_config_set(struct resp_conn *c, const char *name, const char *value, char *err,
                       size_t errsize)
{
    return run_ok(c, err, errsize, "CONFIG SET %s %s", name, value);
}

/* ---- reply readers ------------------------------------------------------- */

bool engine_reply_ok(const redisReply *reply)
{
    return reply->type == REDIS_REPLY_STATUS && reply->len >= 2 &&
           memcmp(reply->str, "OK", 2) == 0 && (reply->len == 2 || reply->str[2] == ' ');
}

bool engine_cluster_info_state_parse(const char *text, size_t len, bool *ok)
{
    struct engine_info *info = engine_info_parse(text, len);
    const char *state = engine_info_get(info, NULL, "cluster_state");

    if (state != NULL)
        *ok = strcmp(state, "ok") == 0;
    engine_info_free(info);
    return state != NULL;
}

bool engine_cluster_info_epoch_parse(const char *text, size_t len, long long *epoch)
{
    struct engine_info *info = engine_info_parse(text, len);
    bool found = engine_info_get_ll(info, NULL, "cluster_my_epoch", epoch) && *epoch >= 0;

    engine_info_free(info);
    return found;
}

bool engine_cluster_myid_parse(const redisReply *reply, char id[ENGINE_CLUSTER_ID_LEN + 1])
{
    if (!resp_reply_is_string(reply) || !engine_cluster_id_valid(reply->str, reply->len))
        return false;
    memcpy(id, reply->str, ENGINE_CLUSTER_ID_LEN);
    id[ENGINE_CLUSTER_ID_LEN] = '\0';
    return true;
}

bool engine_keys_parse(const redisReply *reply, struct engine_keys *out)
{
    memset(out, 0, sizeof(*out));
    if (reply->type != REDIS_REPLY_ARRAY)
        return false;
    for (size_t i = 0; i < reply->elements; i++) {
        if (!resp_reply_is_string(reply->element[i]))
            return false;
    }
    out->keys = xcalloc(reply->elements + 1, sizeof(*out->keys));
    out->lens = xcalloc(reply->elements + 1, sizeof(*out->lens));
    for (size_t i = 0; i < reply->elements; i++) {
        const redisReply *k = reply->element[i];
        out->keys[i] = xmalloc(k->len + 1);
        memcpy(out->keys[i], k->str, k->len);
        out->keys[i][k->len] = '\0';
        out->lens[i] = k->len;
    }
    out->count = reply->elements;
    return true;
}

/* A figure of one slot, from its [name, value, ...] list; -1 when absent. */
static long long stat_value(const redisReply *figures, const char *name)
{
    const redisReply *v = resp_reply_map_get(figures, name);
    return v != NULL && v->type == REDIS_REPLY_INTEGER ? v->integer : -1;
}

bool engine_slot_stats_parse(const redisReply *reply, struct engine_slot_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (reply->type != REDIS_REPLY_ARRAY)
        return false;
    out->stats = xcalloc(reply->elements + 1, sizeof(*out->stats));
    for (size_t i = 0; i < reply->elements; i++) {
        const redisReply *e = reply->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
            e->element[0]->type != REDIS_REPLY_INTEGER)
            continue;
        struct engine_slot_stat *s = &out->stats[out->count++];
        s->slot = (int)e->element[0]->integer;
        s->keys = stat_value(e->element[1], "key-count");
        s->cpu_usec = stat_value(e->element[1], "cpu-usec");
        s->net_in = stat_value(e->element[1], "network-bytes-in");
        s->net_out = stat_value(e->element[1], "network-bytes-out");
    }
    return true;
}
