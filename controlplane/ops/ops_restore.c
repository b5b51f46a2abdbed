/* ops_restore.c -- a cluster created from a snapshot ("restore_from")
 * takes the snapshot's data before it is available.
 *
 * Shard by shard of the snapshot, cairnd reads the shard's file from the
 * snapshot store, checks it against the checksum its agent sent as it
 * expands it into a work file, and starts a private engine of the new
 * cluster's engine on it: 127.0.0.1 only, a port of its own, no
 * persistence. Then every key goes into the new cluster with DUMP and
 * RESTORE (REPLACE, with its time to live), to the shard that owns its
 * slot -- one path whatever the shapes of the snapshot and the cluster,
 * from shards to one primary (cluster mode disabled) or back, into more
 * shards or fewer. The step runs in slices of SLICE_MS, so the runner
 * goes on with other operations between them; the engine of the shard
 * being loaded lives between slices in loaders[]. A cairnd that dies
 * mid-shard loads that shard again from its start: REPLACE makes a key
 * copied twice the same. */
#include "ops.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "catalog.h"
#include "cluster_spec.h"
#include "child.h"
#include "cluster.h"
#include "crypto.h"
#include "gzip.h"
#include "info.h"
#include "log.h"
#include "nodeio.h"
#include "resp.h"
#include "snapshot_store.h"
#include "snapshots.h"
#include "store.h"
#include "timeutil.h"
#include "xalloc.h"

#define SLICE_MS      200
#define SCAN_COUNT    "500"
#define LOADERS_MAX   16
#define LOAD_LIMIT_S  1800 /* a shard's file not loaded by its engine by then: failed */
#define READ_BYTES    (1u << 20)
#define OUTPUT_MAX    4096
#define DATABASES_MAX 16

/* The private engine of the shard being loaded, between slices. The runner
 * thread alone touches these. */
struct loader {
    char op_id[40];
    int shard;
    struct child *child;
    int port;
    char *dir, *file, *conf;
    char password[65]; /* the private engine's: no one else on the host reads the data */
    struct resp_conn *src;
    int dbs[DATABASES_MAX], ndbs, dbi; /* the databases with keys, the one being copied */
    int selected;                      /* the database src has selected: 0 on connecting */
    char cursor[32];                   /* SCAN's, "0" at the start of a database */
    long long keys;                    /* copied so far */
    bool functions;                    /* its functions are in the new cluster */
    bool ready;                        /* it has loaded its file: its databases are known */
};

static struct loader *loaders[LOADERS_MAX];

static void loader_free(struct loader *l)
{
    if (l == NULL)
        return;
    resp_close(l->src);
    child_free(l->child);
    if (l->file != NULL)
        unlink(l->file);
    if (l->conf != NULL)
        unlink(l->conf);
    if (l->dir != NULL)
        rmdir(l->dir);
    free(l->conf);
    free(l->file);
    free(l->dir);
    free(l);
}

static struct loader **slot_of(const char *op_id)
{
    struct loader **free_slot = NULL;
    for (int i = 0; i < LOADERS_MAX; i++) {
        if (loaders[i] != NULL && strcmp(loaders[i]->op_id, op_id) == 0)
            return &loaders[i];
        if (loaders[i] == NULL && free_slot == NULL)
            free_slot = &loaders[i];
    }
    return free_slot;
}

/* ---- the snapshot's file ------------------------------------------------------------ */

struct expand {
    int fd;
    EVP_MD_CTX *sha;
    bool write_failed;
};

static void write_piece(const void *data, size_t len, void *arg)
{
    struct expand *e = arg;
    EVP_DigestUpdate(e->sha, data, len);
    while (len > 0 && !e->write_failed) {
        ssize_t n = write(e->fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            e->write_failed = true;
            break;
        }
        data = (const char *)data + n;
        len -= (size_t)n;
    }
}

/* Expand the shard's file from the store into path, checking its size and
 * SHA-256 against what its agent sent. False with code and err. */
static bool fetch_file(struct app *app, const char *snapshot_id, const json_t *shard,
                       const char *path, enum problem_code *code, char *err, size_t errsize)
{
    int index = (int)json_integer_value(json_object_get(shard, "index"));
    const char *want = json_string_value(json_object_get(shard, "sha256"));
    long long size = json_integer_value(json_object_get(shard, "size_bytes"));
    char key[SNAPSHOT_KEY_MAX], why[256] = "", got[65];
    unsigned char digest[CRYPTO_SHA256_LEN];
    struct expand e = {open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), EVP_MD_CTX_new(),
                       false};
    struct gzip_inflater *g = gzip_inflater_new();
    unsigned char *buf = xmalloc(READ_BYTES);
    uint64_t offset = 0;
    enum gzip_status gs = GZIP_OK;
    bool ok = e.fd >= 0;

    *code = PROBLEM_RESTORE_FAILED;
    if (!ok)
        snprintf(err, errsize, "cannot write %s: %s", path, strerror(errno));
    snapshot_key(snapshot_id, index, key);
    EVP_DigestInit_ex(e.sha, EVP_sha256(), NULL);
    while (ok) {
        ssize_t n =
            snapshot_store_read(app->snapshots, key, offset, buf, READ_BYTES, why, sizeof(why));
        if (n < 0) {
            snprintf(err, errsize, "shard %d's file cannot be read: %s", index, why);
            ok = false;
        } else if (n == 0) {
            break;
        } else {
            offset += (uint64_t)n;
            gs = gzip_inflater_feed(g, buf, (size_t)n, (unsigned long long)size, write_piece, &e,
                                    why, sizeof(why));
            ok = gs == GZIP_OK && !e.write_failed;
        }
    }
    EVP_DigestFinal_ex(e.sha, digest, NULL);
    crypto_hex(digest, sizeof(digest), got);
    if (e.write_failed)
        snprintf(err, errsize, "cannot write %s: %s", path, strerror(errno));
    else if (gs != GZIP_OK || (ok && (!gzip_inflater_whole(g) ||
                                      gzip_inflater_total(g) != (unsigned long long)size ||
                                      want == NULL || strcmp(got, want) != 0))) {
        *code = PROBLEM_SNAPSHOT_CORRUPT;
        snprintf(err, errsize,
                 "shard %d's file is damaged: it expands to %s%llu bytes with SHA-256 %.12s..., "
                 "not the %lld bytes with SHA-256 %.12s... it was taken with%s%s",
                 index, gs == GZIP_TOO_LARGE ? "more than " : "", gzip_inflater_total(g), got, size,
                 want != NULL ? want : "?", why[0] ? ": " : "", why);
        ok = false;
    }
    if (e.fd >= 0)
        close(e.fd);
    EVP_MD_CTX_free(e.sha);
    gzip_inflater_free(g);
    free(buf);
    return ok;
}

/* ---- the private engine ------------------------------------------------------------- */

/* The binary of engine's line on cairnd's own host. */
static bool find_binary(const char *engine, const char *line, char *out, size_t outsize)
{
    struct engine_binary *bins = NULL;
    size_t n = 0;
    char err[256];
    bool found = false;
    if (!engine_discover(NULL, NULL, 0, 2000, &bins, &n, err, sizeof(err)))
        return false;
    for (size_t i = 0; i < n && !found; i++) {
        if (strcmp(engine_kind_name(bins[i].kind), engine) == 0 &&
            strcmp(bins[i].line, line) == 0) {
            snprintf(out, outsize, "%s", bins[i].path);
            found = true;
        }
    }
    engine_binaries_free(bins, n);
    return found;
}

/* A port nobody listens on now, on 127.0.0.1. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* dir, made for cairnd's user alone: a directory already there (a
 * cairnd that died mid-restore) is taken only when it is one, owned by
 * cairnd's user and closed to others, and its old settings go. */
static bool private_dir(const char *dir, char *err, size_t errsize)
{
    struct stat st;
    if (mkdir(dir, 0700) == 0)
        return true;
    if (errno != EEXIST || lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0) {
        snprintf(err, errsize, "cannot make %s a directory of cairnd's alone: %s", dir,
                 errno != EEXIST ? strerror(errno) : "something else is there");
        return false;
    }
    char *conf = xasprintf("%s/engine.conf", dir);
    unlink(conf);
    free(conf);
    return true;
}

/* Start the shard's private engine on its file. */
static struct loader *loader_start(struct op_ctx *ctx, const json_t *snapshot, const json_t *shard,
                                   const char *engine, const char *line, enum problem_code *code,
                                   char *err, size_t errsize)
{
    char binary[PATH_MAX];
    const char *tmp = getenv("TMPDIR");
    struct loader *l = xcalloc(1, sizeof(*l));

    snprintf(l->op_id, sizeof(l->op_id), "%s", ctx->op_id);
    l->shard = (int)json_integer_value(json_object_get(shard, "index"));
    snprintf(l->cursor, sizeof(l->cursor), "0");
    *code = PROBLEM_RESTORE_FAILED;
    if (!find_binary(engine, line, binary, sizeof(binary))) {
        snprintf(err, errsize,
                 "cairnd's host has no %s-server of line %s to read the snapshot with: "
                 "install it there",
                 engine, line);
        free(l);
        return NULL;
    }
    l->dir =
        xasprintf("%s/cairn-restore-%s", tmp != NULL && tmp[0] == '/' ? tmp : "/tmp", ctx->op_id);
    l->file = xasprintf("%s/shard-%04d.rdb", l->dir, l->shard);
    l->conf = xasprintf("%s/engine.conf", l->dir);
    if (!private_dir(l->dir, err, errsize) ||
        !fetch_file(ctx->app, json_string_value(json_object_get(snapshot, "id")), shard, l->file,
                    code, err, errsize)) {
        loader_free(l);
        return NULL;
    }
    unsigned char secret[32];
    crypto_random(secret, sizeof(secret));
    crypto_hex(secret, sizeof(secret), l->password);
    l->port = free_port();
    /* Its settings in a file of its own (0600): the password stays off
     * the process list. */
    int fd = open(l->conf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        snprintf(err, errsize, "cannot write %s: %s", l->conf, strerror(errno));
        if (fd >= 0)
            close(fd);
        loader_free(l);
        return NULL;
    }
    fprintf(f,
            "port %d\nbind 127.0.0.1\nprotected-mode yes\ndir %s\ndbfilename %s\nsave \"\"\n"
            "appendonly no\nmaxmemory 0\nrequirepass %s\n",
            l->port, l->dir, strrchr(l->file, '/') + 1, l->password);
    fclose(f);
    char *const argv[] = {binary, l->conf, NULL};
    l->child = child_start(argv, OUTPUT_MAX, err, errsize);
    if (l->child == NULL) {
        loader_free(l);
        return NULL;
    }
    log_info("restore: a private engine reads a snapshot's shard", "operation=%s shard=%d port=%d",
             ctx->op_id, l->shard, l->port);
    return l;
}

/* Whether the private engine has loaded its file: connected, not loading.
 * False with err when it ended. */
static bool loader_ready(struct loader *l, char *err, size_t errsize)
{
    int status;
    err[0] = '\0';
    if (child_poll(l->child, &status)) {
        size_t len;
        const char *out = child_output(l->child, &len);
        const char *last = len > 0 ? out + len - 1 : out;
        while (last > out && (*last == '\n' || *last == '\r'))
            last--;
        while (last > out && last[-1] != '\n')
            last--;
        snprintf(err, errsize, "the engine reading the snapshot's file ended (status %d): %.200s",
                 status, last);
        return false;
    }
    if (l->src == NULL) {
        struct resp_options o = {.host = "127.0.0.1",
                                 .port = l->port,
                                 .password = l->password,
                                 .connect_timeout_ms = 500,
                                 .command_timeout_ms = 30000,
                                 .limits = &resp_data_limits};
        char why[256];
        l->src = resp_connect(&o, why, sizeof(why));
        if (l->src == NULL)
            return false;
    }
    char why[256];
    struct engine_info *info = resp_info(l->src, "persistence keyspace", why, sizeof(why));
    long long loading = 1;
    bool ready = info != NULL && engine_info_get_ll(info, "persistence", "loading", &loading) &&
                 loading == 0;
    l->ndbs = 0;
    for (int db = 0; ready && db < DATABASES_MAX; db++) {
        char name[16];
        long long keys;
        snprintf(name, sizeof(name), "db%d", db);
        if (engine_info_field_ll(engine_info_get(info, "keyspace", name), "keys", &keys) &&
            keys > 0)
            l->dbs[l->ndbs++] = db;
    }
    engine_info_free(info);
    if (info == NULL) { /* LOADING errors: ask again */
        resp_close(l->src);
        l->src = NULL;
    }
    return ready;
}

/* ---- copying ------------------------------------------------------------------------ */

/* Send what is queued on c and take n replies into out, waiting for the
 * engine up to EXCHANGE_IDLE_MS at a time. False with err (the replies
 * taken are freed). */
#define EXCHANGE_IDLE_MS 60000
static bool exchange(struct resp_conn *c, redisReply **out, size_t n, char *err, size_t errsize)
{
    size_t got = 0;
    for (;;) {
        int flushed = resp_flush(c, err, errsize);
        redisReply *r = NULL;
        int rc = 0;
        while (flushed >= 0 && (rc = resp_next_reply(c, &r, err, errsize)) == 1) {
            if (got < n)
                out[got++] = r;
            else
                resp_reply_free(r);
        }
        if (flushed < 0 || rc < 0)
            break;
        if (got == n && flushed == 1)
            return true;
        struct pollfd p = {.fd = resp_fd(c), .events = resp_poll_events(c)};
        int ready = poll(&p, 1, EXCHANGE_IDLE_MS);
        if (ready == 0) {
            snprintf(err, errsize, "the engine did not answer for %d s", EXCHANGE_IDLE_MS / 1000);
            break;
        }
        if (ready > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) &&
            resp_read(c, err, errsize) < 0)
            break;
    }
    for (size_t i = 0; i < got; i++)
        resp_reply_free(out[i]);
    return false;
}

/* Where the new cluster's keys go: its shards' primaries, and in cluster
 * mode the primary of each slot. Connections are made as keys need them. */
struct targets {
    struct ops_topo t;
    bool cluster;
    const struct cluster_node *primaries[CSPEC_SHARDS_MAX];
    struct resp_conn *conns[CSPEC_SHARDS_MAX];
    int selected[CSPEC_SHARDS_MAX]; /* the database a connection has selected */
    size_t queued[CSPEC_SHARDS_MAX];
    int n;
    short by_slot[CSPEC_SLOTS];
};

static bool targets_open(struct op_ctx *ctx, struct targets *tg, char *err, size_t errsize)
{
    memset(tg, 0, sizeof(*tg));
    if (!ops_topo_load(ctx, &tg->t)) {
        snprintf(err, errsize, "%s", ctx->error);
        return false;
    }
    tg->cluster = tg->t.cluster_mode;
    for (int s = 0; s < CSPEC_SLOTS; s++)
        tg->by_slot[s] = -1;
    for (size_t i = 0; i < tg->t.nodes.count && tg->n < CSPEC_SHARDS_MAX; i++) {
        const struct cluster_node *nd = &tg->t.nodes.items[i];
        if (strcmp(nd->role, "primary") != 0)
            continue;
        tg->primaries[tg->n] = nd;
        for (int s = nd->slot_first; s >= 0 && s <= nd->slot_last && s < CSPEC_SLOTS; s++)
            tg->by_slot[s] = (short)tg->n;
        tg->n++;
    }
    if (tg->n == 0) {
        snprintf(err, errsize, "the new cluster has no primary to load data into");
        return false;
    }
    return true;
}

static void targets_close(struct targets *tg)
{
    for (int i = 0; i < tg->n; i++)
        resp_close(tg->conns[i]);
    ops_topo_free(&tg->t);
}

/* The target of a key: its slot's primary, or the only one. */
static int target_of(const struct targets *tg, const char *key, size_t len)
{
    return tg->cluster ? tg->by_slot[engine_key_slot(key, len)] : 0;
}

/* The connection to target i, made on first use. */
static struct resp_conn *target_conn(struct targets *tg, int i, char *err, size_t errsize)
{
    if (tg->conns[i] == NULL)
        tg->conns[i] = nodeio_connect_data(tg->primaries[i], tg->t.password,
                                           (struct nodeio_wait){3000, 60000}, err, errsize);
    return tg->conns[i];
}

/* The functions the snapshot holds (FUNCTION DUMP), on every primary of
 * the new cluster: they are no keys, and DUMP does not carry them. */
static bool copy_functions(struct loader *l, struct targets *tg, char *err, size_t errsize)
{
    redisReply *list = resp_command(l->src, err, errsize, "FUNCTION LIST");
    bool any = list != NULL && list->type == REDIS_REPLY_ARRAY && list->elements > 0;
    bool ok = list != NULL;
    resp_reply_free(list);
    redisReply *dump = ok && any ? resp_command(l->src, err, errsize, "FUNCTION DUMP") : NULL;
    ok = ok && (!any || (dump != NULL && resp_reply_is_string(dump)));
    for (int i = 0; ok && any && i < tg->n; i++) {
        struct resp_conn *c = target_conn(tg, i, err, errsize);
        const char *argv[] = {"FUNCTION", "RESTORE", dump->str, "REPLACE"};
        size_t lens[] = {8, 7, dump->len, 7};
        redisReply *r = c != NULL ? resp_command_argv(c, 4, argv, lens, err, errsize) : NULL;
        ok = r != NULL;
        resp_reply_free(r);
    }
    resp_reply_free(dump);
    l->functions = ok;
    return ok;
}

/* Queue RESTORE of one key on its target (with SELECT of its database
 * when that is another, cluster mode disabled). */
static bool queue_restore(struct targets *tg, int i, int db, const redisReply *key, long long pttl,
                          const redisReply *payload, char *err, size_t errsize)
{
    if (target_conn(tg, i, err, errsize) == NULL)
        return false;
    if (!tg->cluster && tg->selected[i] != db) {
        char n[16];
        snprintf(n, sizeof(n), "%d", db);
        const char *argv[] = {"SELECT", n};
        resp_append_argv(tg->conns[i], 2, argv, NULL, err, errsize);
        tg->selected[i] = db;
        tg->queued[i]++;
    }
    char ttl[24];
    snprintf(ttl, sizeof(ttl), "%lld", pttl > 0 ? pttl : 0);
    const char *argv[] = {"RESTORE", key->str, ttl, payload->str, "REPLACE"};
    size_t lens[] = {7, key->len, strlen(ttl), payload->len, 7};
    tg->queued[i]++;
    return resp_append_argv(tg->conns[i], 5, argv, lens, err, errsize);
}

/* Send every target what is queued and check each answer. */
static bool targets_flush(struct targets *tg, char *err, size_t errsize)
{
    for (int i = 0; i < tg->n; i++) {
        if (tg->queued[i] == 0)
            continue;
        redisReply **r = xcalloc(tg->queued[i], sizeof(*r));
        bool ok = exchange(tg->conns[i], r, tg->queued[i], err, errsize);
        for (size_t k = 0; ok && k < tg->queued[i]; k++) {
            char why[256];
            if (!resp_reply_check(r[k], why, sizeof(why))) {
                snprintf(err, errsize, "%s:%d refused a key: %s", tg->primaries[i]->address,
                         tg->primaries[i]->port, why);
                ok = false;
            }
        }
        for (size_t k = 0; ok && k < tg->queued[i]; k++)
            resp_reply_free(r[k]);
        if (!ok) {
            for (size_t k = 0; k < tg->queued[i]; k++)
                resp_reply_free(r[k]);
        }
        free(r);
        tg->queued[i] = 0;
        if (!ok)
            return false;
    }
    return true;
}

/* One batch of SCAN from the private engine into the targets. Returns 1
 * when the shard is copied whole, 0 when more is left, -1 with err. */
static int copy_batch(struct loader *l, struct targets *tg, char *err, size_t errsize)
{
    if (l->dbi >= l->ndbs)
        return 1;
    int db = l->dbs[l->dbi];
    if (l->selected != db) {
        redisReply *sel = resp_command(l->src, err, errsize, "SELECT %d", db);
        if (sel == NULL)
            return -1;
        resp_reply_free(sel);
        l->selected = db;
    }
    redisReply *scan = resp_command(l->src, err, errsize, "SCAN %s COUNT " SCAN_COUNT, l->cursor);
    if (scan == NULL)
        return -1;
    if (scan->type != REDIS_REPLY_ARRAY || scan->elements != 2 ||
        !resp_reply_is_string(scan->element[0]) || scan->element[1]->type != REDIS_REPLY_ARRAY) {
        resp_reply_free(scan);
        snprintf(err, errsize, "the engine reading the snapshot answered SCAN oddly");
        return -1;
    }
    const redisReply *keys = scan->element[1];
    size_t n = keys->elements;
    redisReply **r = n > 0 ? xcalloc(2 * n, sizeof(*r)) : NULL;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        const redisReply *k = keys->element[i];
        const char *pttl[] = {"PTTL", k->str}, *dump[] = {"DUMP", k->str};
        size_t lens[] = {4, k->len};
        ok = resp_append_argv(l->src, 2, pttl, lens, err, errsize) &&
             resp_append_argv(l->src, 2, dump, lens, err, errsize);
    }
    if (ok && n > 0)
        ok = exchange(l->src, r, 2 * n, err, errsize);
    for (size_t i = 0; i < n && ok; i++) {
        const redisReply *k = keys->element[i], *ttl = r[2 * i], *payload = r[2 * i + 1];
        long long pttl = 0;
        if (!resp_reply_integer(ttl, &pttl) || pttl == -2 || !resp_reply_is_string(payload))
            continue; /* gone meanwhile: it expired */
        int t = target_of(tg, k->str, k->len);
        if (t < 0) {
            snprintf(err, errsize, "no shard of the new cluster owns the slot of a key");
            ok = false;
        } else {
            ok = queue_restore(tg, t, db, k, pttl, payload, err, errsize);
        }
    }
    if (ok)
        ok = targets_flush(tg, err, errsize);
    for (size_t i = 0; r != NULL && i < 2 * n; i++)
        resp_reply_free(r[i]);
    free(r);
    if (ok) {
        l->keys += (long long)n;
        snprintf(l->cursor, sizeof(l->cursor), "%.*s", (int)scan->element[0]->len,
                 scan->element[0]->str);
        if (strcmp(l->cursor, "0") == 0)
            l->dbi++; /* this database is done; the next one starts at 0 */
    }
    resp_reply_free(scan);
    return !ok ? -1 : l->dbi >= l->ndbs;
}

/* ---- the step ------------------------------------------------------------------------ */

struct snapshot_call {
    const char *id;
    json_t *doc;
};

static enum db_status snapshot_fn(struct db_conn *conn, void *arg)
{
    struct snapshot_call *c = arg;
    char *text = NULL;
    enum db_status st = store_snapshot_get(conn, c->id, &text);
    json_decref(c->doc);
    c->doc = text != NULL ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return st == DB_OK && c->doc == NULL ? DB_ERROR : st;
}

/* The first shard of the snapshot not loaded yet, or NULL. */
static const json_t *next_shard(const json_t *snapshot, const json_t *done)
{
    size_t i;
    const json_t *shard;
    json_array_foreach (json_object_get(snapshot, "shards"), i, shard) {
        bool loaded = false;
        size_t k;
        const json_t *d;
        json_array_foreach (done, k, d)
            loaded = loaded ||
                     json_integer_value(d) == json_integer_value(json_object_get(shard, "index"));
        if (!loaded)
            return shard;
    }
    return NULL;
}

static enum op_result fail_loader(struct op_ctx *ctx, struct loader **slot, enum problem_code code,
                                  const char *err)
{
    loader_free(*slot);
    *slot = NULL;
    return op_fail(ctx, code, "%s", err);
}

enum op_result ops_restore(struct op_ctx *ctx)
{
    const char *id = ops_context_str(ctx, "restore_from");
    struct snapshot_call sc = {id, NULL};
    char err[1024];
    enum problem_code code = PROBLEM_RESTORE_FAILED;

    if (id == NULL)
        return OP_NEXT;
    if (ctx->app->snapshots == NULL)
        return op_fail(ctx, PROBLEM_NO_SNAPSHOT_STORE,
                       "this cairnd has no snapshot store (--snapshot-store) to restore from");
    enum db_status st = db_run(ctx->app->db, snapshot_fn, &sc);
    if (st == DB_NOT_FOUND)
        return op_fail(ctx, PROBLEM_RESTORE_FAILED, "snapshot %s is gone", id);
    if (st != DB_OK)
        return op_wait(ctx, OPS_POLL_MS);
    json_t *done = ops_context_array(ctx, "restored_shards");
    json_object_set_new(ctx->context, "snapshot_keys",
                        json_integer(json_integer_value(json_object_get(sc.doc, "keys"))));
    const json_t *shard = next_shard(sc.doc, done);
    struct loader **slot = slot_of(ctx->op_id);
    if (shard == NULL || slot == NULL) {
        json_decref(sc.doc);
        return shard == NULL ? OP_NEXT : op_wait(ctx, 1000); /* every loader busy: later */
    }
    int index = (int)json_integer_value(json_object_get(shard, "index"));
    if (*slot != NULL && (*slot)->shard != index) {
        loader_free(*slot);
        *slot = NULL;
    }
    if (*slot == NULL) {
        struct ops_topo t;
        /* The cluster's own engine reads the file: it loads what the
         * snapshot's engine saved (restore_check()), and its DUMP is what its
         * nodes RESTORE. */
        if (!ops_topo_load(ctx, &t)) {
            json_decref(sc.doc);
            return op_wait(ctx, OPS_POLL_MS);
        }
        char kind[16], line[16];
        snprintf(kind, sizeof(kind), "%s", t.nodes.count > 0 ? t.nodes.items[0].engine : "");
        snprintf(line, sizeof(line), "%s",
                 t.nodes.count > 0 ? t.nodes.items[0].engine_version : "");
        ops_topo_free(&t);
        *slot = loader_start(ctx, sc.doc, shard, kind, line, &code, err, sizeof(err));
        json_decref(sc.doc);
        if (*slot == NULL)
            return op_fail(ctx, code, "%s", err);
        ops_elapsed_s(ctx, "load_since");
        return op_wait(ctx, OPS_POLL_MS);
    }
    json_decref(sc.doc);
    struct loader *l = *slot;
    if (!l->ready) {
        if (!(l->ready = loader_ready(l, err, sizeof(err)))) {
            if (err[0] != '\0')
                return fail_loader(ctx, slot, PROBLEM_RESTORE_FAILED, err);
            if (ops_elapsed_s(ctx, "load_since") > LOAD_LIMIT_S)
                return fail_loader(ctx, slot, PROBLEM_RESTORE_FAILED,
                                   "the engine reading a snapshot's shard did not load it in time");
            return op_wait(ctx, OPS_POLL_MS);
        }
    }
    struct targets *tg = xmalloc(sizeof(*tg));
    int64_t until = time_mono_us() + SLICE_MS * 1000LL;
    int rc = targets_open(ctx, tg, err, sizeof(err)) ? 0 : -1;
    if (rc == 0 && !l->functions && !copy_functions(l, tg, err, sizeof(err)))
        rc = -1;
    while (rc == 0 && time_mono_us() < until)
        rc = copy_batch(l, tg, err, sizeof(err));
    targets_close(tg);
    free(tg);
    if (rc < 0)
        return fail_loader(ctx, slot, PROBLEM_RESTORE_FAILED, err);
    long long restored = ops_context_int(ctx, "restored_keys_before") + l->keys;
    long long total = ops_context_int(ctx, "snapshot_keys");
    json_object_set_new(ctx->context, "restored_keys", json_integer(restored));
    if (total > 0)
        ctx->progress = (int)(restored >= total ? 99 : restored * 99 / total);
    if (rc == 1) {
        log_info("restore: a snapshot's shard is loaded", "operation=%s shard=%d keys=%lld",
                 ctx->op_id, index, l->keys);
        json_array_append_new(done, json_integer(index));
        json_object_set_new(ctx->context, "restored_keys_before",
                            json_integer(ops_context_int(ctx, "restored_keys")));
        json_object_del(ctx->context, "load_since");
        loader_free(l);
        *slot = NULL;
    }
    return op_wait(ctx, 0);
}
