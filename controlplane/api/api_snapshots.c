/* api_snapshots.c -- backups (snapshots.h): POST
 * /v1/clusters/{id}/snapshots takes one, /v1/snapshots lists, reads and
 * deletes them; and the agents' side, through which a host's agent carries
 * a shard's saved file to cairnd in gzip parts (docs/agent-protocol.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "api.h"
#include "crypto.h"
#include "gzip.h"
#include "log.h"
#include "snapshot_store.h"
#include "snapshots.h"
#include "xalloc.h"

static enum db_status fetch_page(struct db_conn *conn, const void *filter, const struct page *page,
                                 char **items, char *next_key)
{
    return store_snapshots_list(conn, filter, page, items, next_key);
}

static const struct api_list snapshots = {"snapshots", "snapshots", PAGE_KEY_TIME_UUID, fetch_page};

void api_snapshots_list(struct http_request *req)
{
    if (api_query_cluster_id(req, "cluster_id"))
        api_reply_list(req, &snapshots, http_query(req, "cluster_id"));
}

void api_snapshots_get(struct http_request *req)
{
    api_reply_get(req, store_snapshot_get, http_param(req, "id"), PROBLEM_SNAPSHOT_NOT_FOUND);
}

/* The snapshot's document with status and its Location. */
static void reply_snapshot(struct http_request *req, const char *id, int status)
{
    char *location = xasprintf("/v1/snapshots/%s", id);
    http_add_header(req, "Location", location);
    free(location);
    api_reply_get_status(req, store_snapshot_get, id, PROBLEM_SNAPSHOT_NOT_FOUND, status);
}

void api_snapshots_create(struct http_request *req)
{
    const char *name = json_string_value(json_object_get(req->json, "name"));
    char id[STORE_UUID_SIZE];
    struct problem p = {0};

    if (snapshot_create(req->app, http_param(req, "id"), name, id, &p))
        reply_snapshot(req, id, 202);
    else
        http_reply_error(req, &p);
}

void api_snapshots_delete(struct http_request *req)
{
    char id[STORE_UUID_SIZE] = "";
    struct problem p = {0};

    if (!snapshot_delete(req->app, http_param(req, "id"), id, &p)) {
        http_reply_error(req, &p);
        return;
    }
    reply_snapshot(req, id, 202); /* says "deleting" */
    snapshot_remove_files(req->app);
}

/* ---- the agents' uploads ------------------------------------------------------- */

const struct jspec_field api_agent_snapshot_complete_spec[] = {
    {.name = "parts", .type = JSPEC_INTEGER, .has_range = true, .min = 1, .max = 1000000},
    {.name = "size_bytes", .type = JSPEC_INTEGER, .has_range = true, .min = 0, .max = 1LL << 50},
    {.name = "sha256", .type = JSPEC_STRING, .min_len = 64, .max_len = 64},
    {.name = "error", .type = JSPEC_STRING, .min_len = 1, .max_len = 1024},
    {0},
};

/* The shard and part a path names: false after replying when it names
 * none. */
static bool path_numbers(struct http_request *req, int *shard, int *part)
{
    const char *id = http_param(req, "id"), *s = http_param(req, "shard");
    const char *n = part != NULL ? http_param(req, "part") : "1";
    char *end_s, *end_n;
    errno = 0;
    long vs = strtol(s, &end_s, 10), vn = strtol(n, &end_n, 10);
    if (!page_is_uuid(id) || *end_s != '\0' || *end_n != '\0' || errno != 0 || s[0] == '-' ||
        vs < 0 || vs >= 1000 || vn < 1 || vn > 1000000) {
        http_reply_problem(req, PROBLEM_SNAPSHOT_NOT_FOUND, NULL,
                           "no upload is asked of this host at %s", req->path);
        return false;
    }
    *shard = (int)vs;
    if (part != NULL)
        *part = (int)vn;
    return true;
}

/* What a part expands to, checked as it expands. */
struct part_check {
    EVP_MD_CTX *sha;
    unsigned char head[8];
    size_t head_len;
};

static void hash_piece(const void *data, size_t len, void *arg)
{
    struct part_check *c = arg;
    EVP_DigestUpdate(c->sha, data, len);
    while (c->head_len < sizeof(c->head) && len > 0) {
        c->head[c->head_len++] = *(const unsigned char *)data;
        data = (const unsigned char *)data + 1;
        len--;
    }
}

/* The part's gzip members must expand to exactly the bytes its headers
 * name, with their SHA-256; the file's first part must start as an RDB
 * file does. False with why in err. */
static bool check_part(struct http_request *req, int part, unsigned long long *raw_bytes,
                       const char **field, char *err, size_t errsize)
{
    const char *bytes = http_header(req, "Cairn-Raw-Bytes");
    const char *sha = http_header(req, "Cairn-Raw-Sha256");
    char *end;
    unsigned char want[CRYPTO_SHA256_LEN], got[CRYPTO_SHA256_LEN];

    errno = 0;
    *raw_bytes = bytes != NULL ? strtoull(bytes, &end, 10) : 0;
    if (bytes == NULL || bytes[0] < '0' || bytes[0] > '9' || *end != '\0' || errno != 0 ||
        *raw_bytes > SNAPSHOT_PART_RAW_MAX) {
        *field = "Cairn-Raw-Bytes";
        snprintf(err, errsize, "must be the bytes the part expands to, at most %llu",
                 SNAPSHOT_PART_RAW_MAX);
        return false;
    }
    if (sha == NULL || strlen(sha) != 64 || !crypto_unhex(sha, sizeof(want), want)) {
        *field = "Cairn-Raw-Sha256";
        snprintf(err, errsize, "must be the SHA-256 of what the part expands to, 64 hex digits");
        return false;
    }
    *field = "body";
    struct part_check c = {EVP_MD_CTX_new(), {0}, 0};
    struct gzip_inflater *g = gzip_inflater_new();
    EVP_DigestInit_ex(c.sha, EVP_sha256(), NULL);
    char why[256] = "";
    enum gzip_status st = gzip_inflater_feed(g, req->body, req->body_len, *raw_bytes, hash_piece,
                                             &c, why, sizeof(why));
    unsigned long long total = gzip_inflater_total(g);
    bool whole = gzip_inflater_whole(g);
    EVP_DigestFinal_ex(c.sha, got, NULL);
    EVP_MD_CTX_free(c.sha);
    gzip_inflater_free(g);
    if (st == GZIP_CORRUPT || !whole)
        snprintf(err, errsize, "part %d is not whole gzip data: %s", part,
                 why[0] != '\0' ? why : "it ends early");
    else if (st == GZIP_TOO_LARGE || total != *raw_bytes)
        snprintf(err, errsize, "part %d expands to %s%llu bytes, not the %llu it was sent with",
                 part, st == GZIP_TOO_LARGE ? "more than " : "", total, *raw_bytes);
    else if (!crypto_equal(got, want, sizeof(got)))
        snprintf(err, errsize, "part %d does not match its Cairn-Raw-Sha256", part);
    else if (part == 1 && (c.head_len < 5 || memcmp(c.head, "REDIS", 5) != 0))
        snprintf(err, errsize, "the file does not start as an RDB file does (\"REDIS\")");
    else
        return true;
    return false;
}

/* One request of an upload: a part, or its end. */
struct upload_call {
    struct app *app;
    const char *snapshot_id, *host_id;
    int shard, part;
    const void *data; /* a part */
    size_t len;
    unsigned long long raw_bytes;
    const json_t *body; /* the end */
    struct store_snapshot_upload up;
    struct problem *p;
};

/* The call of req (a part, or the end), once its path names an upload
 * and this cairnd keeps snapshots; false after replying otherwise. */
static bool upload_call(struct http_request *req, bool part, struct upload_call *c,
                        struct problem *p)
{
    *c = (struct upload_call){.app = req->app,
                              .snapshot_id = http_param(req, "id"),
                              .host_id = req->who.host_id,
                              .data = req->body,
                              .len = req->body_len,
                              .body = req->json,
                              .p = p};
    if (!path_numbers(req, &c->shard, part ? &c->part : NULL))
        return false;
    if (req->app->snapshots != NULL)
        return true;
    http_reply_problem(req, PROBLEM_NO_SNAPSHOT_STORE, NULL,
                       "this cairnd has no snapshot store (--snapshot-store)");
    return false;
}

/* The upload, locked for the transaction, when it is asked of the
 * caller's host. */
static enum db_status lock_upload(struct db_conn *conn, struct upload_call *c)
{
    problem_clear(c->p);
    enum db_status st =
        store_snapshot_upload_lock(conn, c->snapshot_id, c->shard, c->host_id, &c->up);
    if (st != DB_NOT_FOUND)
        return st;
    problem_set(c->p, PROBLEM_SNAPSHOT_NOT_FOUND,
                "shard %d of snapshot %s is not asked of this host", c->shard, c->snapshot_id);
    return DB_REFUSED;
}

static enum db_status store_failed(struct upload_call *c, const char *err)
{
    problem_set(c->p, PROBLEM_INTERNAL_ERROR, "the snapshot store: %s", err);
    return DB_REFUSED;
}

static enum db_status part_fn(struct db_conn *conn, void *arg)
{
    struct upload_call *c = arg;
    char key[SNAPSHOT_KEY_MAX], tag[SNAPSHOT_STORE_TAG_MAX], err[512];

    enum db_status st = lock_upload(conn, c);
    if (st != DB_OK || c->part == c->up.parts)
        return st; /* a part already received: its reply was lost */
    if (c->part != 1 && c->part != c->up.parts + 1) {
        problem_set(c->p, PROBLEM_SNAPSHOT_PART_OUT_OF_ORDER,
                    "part %d of shard %d arrived; the upload expects part %d (or part 1 to start "
                    "over)",
                    c->part, c->shard, c->up.parts + 1);
        return DB_REFUSED;
    }
    snapshot_key(c->snapshot_id, c->shard, key);
    if (c->part == 1) {
        /* The upload starts (over): an agent restarted sends the file anew. */
        if (c->up.upload_id[0] != '\0')
            snapshot_store_abort(c->app->snapshots, key, c->up.upload_id, err, sizeof(err));
        if (!snapshot_store_begin(c->app->snapshots, key, c->up.upload_id, err, sizeof(err)))
            return store_failed(c, err);
        c->up.parts = 0;
        c->up.stored_bytes = 0;
        c->up.raw_bytes = 0;
        json_array_clear(c->up.tags);
    }
    if (!snapshot_store_put(c->app->snapshots, key, c->up.upload_id, c->part,
                            (uint64_t)c->up.stored_bytes, c->data, c->len, tag, err, sizeof(err)))
        return store_failed(c, err);
    c->up.parts = c->part;
    c->up.stored_bytes += (long long)c->len;
    c->up.raw_bytes += (long long)c->raw_bytes;
    json_array_append_new(c->up.tags, json_string(tag));
    return store_snapshot_upload_part(conn, c->snapshot_id, c->shard, &c->up);
}

void api_agent_snapshot_part(struct http_request *req)
{
    struct problem p = {0};
    struct upload_call c;
    char err[512] = "a part has data";
    const char *field = "body";

    if (!upload_call(req, true, &c, &p))
        return;
    if (req->body_len == 0 || !check_part(req, c.part, &c.raw_bytes, &field, err, sizeof(err))) {
        json_t *errors = json_array();
        jspec_error(errors, field, err);
        http_reply_problem(req, PROBLEM_VALIDATION_FAILED, errors, "%s %s", field, err);
        return;
    }
    enum db_status st = db_tx(req->app->db, DB_READ_COMMITTED, part_fn, &c);
    json_decref(c.up.tags);
    if (!problem_db(&p, st)) {
        http_reply_error(req, &p);
        return;
    }
    http_reply_json(
        req, 200,
        json_pack("{s:i, s:I}", "part", c.part, "stored_bytes", (json_int_t)c.up.stored_bytes));
}

static enum db_status complete_fn(struct db_conn *conn, void *arg)
{
    struct upload_call *c = arg;
    const char *error = json_string_value(json_object_get(c->body, "error"));
    const char *sha = json_string_value(json_object_get(c->body, "sha256"));
    long long parts = json_integer_value(json_object_get(c->body, "parts"));
    long long size = json_integer_value(json_object_get(c->body, "size_bytes"));
    char key[SNAPSHOT_KEY_MAX], err[512];

    enum db_status st = lock_upload(conn, c);
    if (st != DB_OK)
        return st;
    if (error != NULL)
        return store_snapshot_upload_failed(conn, c->snapshot_id, c->shard, error);
    if (sha == NULL || parts != c->up.parts || size != c->up.raw_bytes) {
        problem_set(c->p, PROBLEM_SNAPSHOT_PART_OUT_OF_ORDER,
                    "the upload holds %d part(s) of %lld bytes, not the %lld of %lld bytes "
                    "said to be complete (or no sha256 was sent)",
                    c->up.parts, c->up.raw_bytes, parts, size);
        return DB_REFUSED;
    }
    const char **tags = xcalloc(json_array_size(c->up.tags) + 1, sizeof(*tags));
    for (size_t i = 0; i < json_array_size(c->up.tags); i++)
        tags[i] = json_string_value(json_array_get(c->up.tags, i));
    snapshot_key(c->snapshot_id, c->shard, key);
    bool ok = snapshot_store_finish(c->app->snapshots, key, c->up.upload_id, tags, c->up.parts,
                                    (uint64_t)c->up.stored_bytes, err, sizeof(err));
    free(tags);
    if (!ok)
        return store_failed(c, err);
    return store_snapshot_upload_done(conn, c->snapshot_id, c->shard, size, sha);
}

void api_agent_snapshot_complete(struct http_request *req)
{
    struct problem p = {0};
    struct upload_call c;

    if (!upload_call(req, false, &c, &p))
        return;
    enum db_status st = db_tx(req->app->db, DB_READ_COMMITTED, complete_fn, &c);
    json_decref(c.up.tags);
    if (!problem_db(&p, st)) {
        http_reply_error(req, &p);
        return;
    }
    if (json_object_get(req->json, "error") != NULL)
        log_warn("an agent could not upload a snapshot file",
                 "snapshot=%s shard=%d host=%s error=\"%s\"", c.snapshot_id, c.shard, c.host_id,
                 json_string_value(json_object_get(req->json, "error")));
    http_reply_empty(req, 204);
}
