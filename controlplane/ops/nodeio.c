/* nodeio.c -- see nodeio.h. */
#include "nodeio.h"

#include <stdio.h>
#include <string.h>

#include "engine_config.h"
#include "info.h"

/* Set once at start, before any thread connects (nodeio_use_tls()). */
static const struct resp_tls *engine_tls;

void nodeio_use_tls(const struct resp_tls *tls)
{
    engine_tls = tls;
}

static struct resp_conn *connect_with(const struct cluster_node *n, const char *password,
                                      struct nodeio_wait wait, const struct resp_limits *limits,
                                      char *err, size_t errsize)
{
    struct resp_options o = {.host = n->address,
                             .limits = limits,
                             .port = n->port,
                             .connect_timeout_ms = wait.connect_ms,
                             .command_timeout_ms = wait.command_ms,
                             .username = password != NULL ? ENGINE_ADMIN_USER : NULL,
                             .password = password,
                             .tls = n->tls ? engine_tls : NULL};
    if (n->tls && engine_tls == NULL) {
        snprintf(err, errsize, "%s:%d serves TLS only, and cairnd has no certificate authority",
                 n->address, n->port);
        return NULL;
    }
    return resp_connect(&o, err, errsize);
}

struct resp_conn *nodeio_connect(const struct cluster_node *n, const char *password,
                                 struct nodeio_wait wait, char *err, size_t errsize)
{
    return connect_with(n, password, wait, NULL, err, errsize);
}

struct resp_conn *nodeio_connect_data(const struct cluster_node *n, const char *password,
                                      struct nodeio_wait wait, char *err, size_t errsize)
{
    return connect_with(n, password, wait, &resp_data_limits, err, errsize);
}

bool nodeio_follow(const struct cluster_node *n, const char *password, struct nodeio_wait wait,
                   const struct cluster_node *primary, char *err, size_t errsize)
{
    struct resp_conn *c = nodeio_connect(n, password, wait, err, errsize);
    bool ok = c != NULL && engine_replicaof(c, primary->address, primary->port, err, errsize);

    resp_close(c);
    return ok;
}

bool nodeio_cluster_failover(const struct cluster_node *n, const char *password,
                             struct nodeio_wait wait, enum engine_failover_mode mode, char *err,
                             size_t errsize)
{
    struct resp_conn *c = nodeio_connect(n, password, wait, err, errsize);
    bool ok = c != NULL && engine_cluster_failover(c, mode, err, errsize);

    resp_close(c);
    return ok;
}

bool nodeio_ping(const struct cluster_node *n, const char *password, struct nodeio_wait wait)
{
    char err[256];
    struct resp_conn *c = nodeio_connect(n, password, wait, err, sizeof(err));
    bool ok = c != NULL && resp_ping(c, err, sizeof(err));

    resp_close(c);
    return ok;
}

bool nodeio_cluster_meet(const struct cluster_node *n, const char *password,
                         struct nodeio_wait wait, const struct cluster_node *to, char *err,
                         size_t errsize)
{
    struct resp_conn *c = nodeio_connect(n, password, wait, err, errsize);
    bool ok = c != NULL && engine_cluster_meet(c, to->address, to->port, err, errsize);

    resp_close(c);
    return ok;
}

bool nodeio_cluster_replicate(const struct cluster_node *n, const char *password,
                              struct nodeio_wait wait, const char *primary_id, char *err,
                              size_t errsize)
{
    struct resp_conn *c = nodeio_connect(n, password, wait, err, errsize);
    bool ok = c != NULL && engine_cluster_replicate(c, primary_id, err, errsize);

    resp_close(c);
    return ok;
}

bool nodeio_cluster_forget(const struct cluster_node *n, const char *password,
                           struct nodeio_wait wait, const char *id, char *err, size_t errsize)
{
    struct resp_conn *c = nodeio_connect(n, password, wait, err, errsize);
    bool ok = c != NULL && engine_cluster_forget(c, id, err, errsize);

    resp_close(c);
    return ok;
}

bool nodeio_cluster_view(const struct cluster_node *n, const char *password,
                         struct nodeio_wait wait, struct engine_cluster_nodes *view, char *err,
                         size_t errsize)
{
    struct resp_conn *c = nodeio_connect(n, password, wait, err, errsize);
    bool ok = c != NULL && engine_cluster_nodes(c, view, err, errsize);

    resp_close(c);
    return ok;
}

bool nodeio_cluster_myid(const struct cluster_node *n, const char *password,
                         struct nodeio_wait wait, char *id, char *err, size_t errsize)
{
    struct engine_cluster_nodes view = {0};
    if (!nodeio_cluster_view(n, password, wait, &view, err, errsize))
        return false;
    const struct engine_cluster_node *me = engine_cluster_nodes_myself(&view);
    if (me != NULL)
        snprintf(id, ENGINE_CLUSTER_ID_LEN + 1, "%s", me->id);
    else
        snprintf(err, errsize, "%s:%d: no node flagged myself in CLUSTER NODES", n->address,
                 n->port);
    engine_cluster_nodes_free(&view);
    return me != NULL;
}

bool nodeio_cluster_state_ok(const struct cluster_node *n, const char *password,
                             struct nodeio_wait wait)
{
    char err[256];
    bool ok = false;
    struct resp_conn *c = nodeio_connect(n, password, wait, err, sizeof(err));
    bool asked = c != NULL && engine_cluster_info_state(c, &ok, err, sizeof(err));

    resp_close(c);
    return asked && ok;
}

bool nodeio_cluster_epoch(const struct cluster_node *n, const char *password,
                          struct nodeio_wait wait, long long *epoch)
{
    char err[256];
    struct resp_conn *c = nodeio_connect(n, password, wait, err, sizeof(err));
    bool read = c != NULL && engine_cluster_epoch(c, epoch, err, sizeof(err));

    resp_close(c);
    return read;
}

bool nodeio_request_ack(const struct cluster_node *n, const char *password, char *err,
                        size_t errsize)
{
    struct resp_conn *c = nodeio_connect(n, password, NODEIO_QUICK, err, errsize);
    bool ok = c != NULL && engine_replconf_getack(c, err, errsize);

    resp_close(c);
    return ok;
}

static bool info_is(const struct engine_info *info, const char *section, const char *key,
                    const char *value)
{
    const char *v = engine_info_get(info, section, key);
    return v != NULL && strcmp(v, value) == 0;
}

bool nodeio_replication(const struct cluster_node *n, const char *password, struct nodeio_wait wait,
                        struct nodeio_repl *out, char *err, size_t errsize)
{
    struct resp_conn *c = nodeio_connect(n, password, wait, err, errsize);
    struct engine_info *info =
        c != NULL ? resp_info(c, "replication persistence", err, errsize) : NULL;
    long long down_s = -1;

    resp_close(c);
    memset(out, 0, sizeof(*out));
    if (info == NULL)
        return false;
    out->primary = info_is(info, "replication", "role", "master");
    out->loading = info_is(info, "persistence", "loading", "1");
    bool link_up = info_is(info, "replication", "master_link_status", "up");
    bool syncing = info_is(info, "replication", "master_sync_in_progress", "1");
    (void)engine_info_get_ll(info, "replication", "master_link_down_since_seconds", &down_s);
    (void)engine_info_get_ll(info, "replication",
                             out->primary ? "master_repl_offset" : "slave_repl_offset",
                             &out->offset);
    const char *host = engine_info_get(info, "replication", "master_host");
    long long port = 0;
    if (host != NULL)
        snprintf(out->master_host, sizeof(out->master_host), "%s", host);
    if (engine_info_get_ll(info, "replication", "master_port", &port))
        out->master_port = (int)port;
    out->link_down_s = link_up ? -1 : down_s;
    out->in_sync = !out->primary && link_up && !syncing && !out->loading;
    out->has_data = !out->primary && !syncing && !out->loading &&
                    (link_up || (down_s >= 0 && down_s <= NODEIO_LINK_RECENT_S));
    /* The engines count a link never up since the start as down since -1. */
    out->synced = !out->primary && (link_up || down_s >= 0);
    engine_info_free(info);
    return true;
}

/* outcome, once a hold is ended when unpause asks for it. */
static enum nodeio_fenced unheld(struct resp_conn *c, bool unpause, enum nodeio_fenced outcome,
                                 char *err, size_t errsize)
{
    return !unpause || engine_unpause(c, err, errsize) ? outcome : NODEIO_FENCE_FAILED;
}

enum nodeio_fenced nodeio_fence_writes(const struct cluster_node *n, const char *password,
                                       struct nodeio_wait wait, long long newer_epoch, int pause_ms,
                                       bool unpause, char *err, size_t errsize)
{
    struct resp_conn *c = nodeio_connect(n, password, wait, err, errsize);
    if (c == NULL)
        return NODEIO_FENCE_UNREACHED;
    struct engine_info *info = resp_info(c, "replication", err, errsize);
    long long epoch = -1;
    enum nodeio_fenced done = NODEIO_FENCE_FAILED;
    if (info != NULL && !info_is(info, "replication", "role", "master"))
        done = unheld(c, unpause, NODEIO_FENCE_REPLICA, err, errsize);
    else if (info != NULL && engine_cluster_epoch(c, &epoch, err, errsize)) {
        if (epoch >= newer_epoch) /* the database's word was old: the claim is good */
            done = unheld(c, unpause, NODEIO_FENCE_CURRENT, err, errsize);
        else if (engine_pause_writes(c, pause_ms, err, errsize))
            done = NODEIO_FENCE_HELD;
    }
    engine_info_free(info);
    resp_close(c);
    return done;
}
