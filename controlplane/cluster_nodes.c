/* cluster_nodes.c -- what cairnd needs to talk to a cluster's engines: its
 * nodes as last placed and reported, and the passwords: the tenant's,
 * sealed in the database with cairnd's secret key (lib/secretbox), and
 * Cairn's own users', derived from that key. */
#include "cluster_nodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "engine_config.h"
#include "log.h"
#include "secretbox.h"
#include "store.h"
#include "xalloc.h"

/* ---- secrets ------------------------------------------------------------- */

char *cluster_open_secret(struct app *app, const char *cluster_id, const char *hex)
{
    size_t n = strlen(hex) / 2;
    if (!app->have_secret_key || n <= SECRETBOX_OVERHEAD)
        return NULL;
    unsigned char *box = xmalloc(n);
    if (!crypto_unhex(hex, n, box)) {
        free(box);
        return NULL;
    }
    char *plain = xcalloc(n - SECRETBOX_OVERHEAD + 1, 1);
    if (!secretbox_open(app->secret_key, box, n, cluster_id, (unsigned char *)plain)) {
        log_error("cannot open a cluster's engine password: wrong secret key file?", "cluster=%s",
                  cluster_id);
        free(plain);
        plain = NULL;
    }
    free(box);
    return plain;
}

char *cluster_seal_secret(struct app *app, const char *cluster_id, const char *password)
{
    size_t len = strlen(password), boxlen = len + SECRETBOX_OVERHEAD;
    unsigned char *box = xmalloc(boxlen);
    char *text = xmalloc(2 * boxlen + 3);

    secretbox_seal(app->secret_key, password, len, cluster_id, box);
    strcpy(text, "\\x");
    crypto_hex(box, boxlen, text + 2);
    free(box);
    return text;
}

/* What the Sentinel listener finds a cluster's AUTH token by
 * (migrations/0034_auth_lookup.sql): an HMAC of the token under a key of
 * its own derived from cairnd's secret key, so the database alone tells
 * nothing of the token, as "\\x<hex>" for a bytea parameter. */
char *cluster_auth_lookup(struct app *app, const char *token, size_t len)
{
    static const char purpose[] = "cairn sentinel auth lookup";
    unsigned char key[CRYPTO_SHA256_LEN], mac[CRYPTO_SHA256_LEN];

    if (!app->have_secret_key)
        return NULL;
    crypto_hmac_sha256(app->secret_key, sizeof(app->secret_key), purpose, sizeof(purpose) - 1, key);
    crypto_hmac_sha256(key, sizeof(key), token, len, mac);
    char *text = xmalloc(2 * sizeof(mac) + 3);
    strcpy(text, "\\x");
    crypto_hex(mac, sizeof(mac), text + 2);
    return text;
}

/* Cairn's own engine users' passwords are not stored: each is an HMAC under
 * cairnd's secret key of the cluster's uid (one life of its name) and the
 * user's name, so every cairnd sharing the key knows them, a cluster
 * created again under the same name gets new ones, and no tenant-facing
 * path holds them. */
char *cluster_engine_password(struct app *app, const char *cluster_uid, const char *user)
{
    unsigned char mac[CRYPTO_SHA256_LEN];
    char *hex;

    if (!app->have_secret_key || cluster_uid == NULL)
        return NULL;
    char *what = xasprintf("cairn engine user\n%s\n%s", cluster_uid, user);
    crypto_hmac_sha256(app->secret_key, sizeof(app->secret_key), what, strlen(what), mac);
    free(what);
    hex = xmalloc(2 * sizeof(mac) + 1);
    crypto_hex(mac, sizeof(mac), hex);
    return hex;
}

/* ---- nodes for the operations ------------------------------------------- */

struct load_call {
    const char *id;
    struct cluster_nodes *out;
    bool cluster_mode;
    char *uid;
};

static enum db_status load_fn(struct db_conn *conn, void *arg)
{
    struct load_call *c = arg;
    return store_cluster_nodes(conn, c->id, c->out, &c->cluster_mode, &c->uid);
}

bool cluster_nodes_load(struct app *app, const char *cluster_id, struct cluster_nodes *out,
                        char **password, bool *cluster_mode, char *err, size_t errsize)
{
    struct load_call call = {.id = cluster_id, .out = out};
    enum db_status st = db_run(app->db, load_fn, &call);

    *password = NULL;
    if (st != DB_OK) {
        snprintf(err, errsize, "could not read cluster %s from the database", cluster_id);
        free(call.uid);
        return false;
    }
    *cluster_mode = call.cluster_mode;
    *password = cluster_engine_password(app, call.uid, ENGINE_ADMIN_USER);
    free(call.uid);
    if (*password == NULL) {
        snprintf(err, errsize, "cairnd has no secret key to derive its engine password with");
        cluster_nodes_free(out);
        return false;
    }
    return true;
}

const struct cluster_node *cluster_nodes_find(const struct cluster_nodes *nodes, const char *id)
{
    for (size_t i = 0; id != NULL && i < nodes->count; i++) {
        if (strcmp(nodes->items[i].id, id) == 0)
            return &nodes->items[i];
    }
    return NULL;
}

void cluster_nodes_free(struct cluster_nodes *nodes)
{
    free(nodes->items);
    nodes->items = NULL;
    nodes->count = 0;
}

/* ---- the engine password -------------------------------------------------- */

static enum db_status secret_fn(struct db_conn *conn, void *arg)
{
    char **hex = arg;
    return store_cluster_secret(conn, hex[0], &hex[1]);
}

char *cluster_password(struct app *app, const char *cluster_id, enum db_status *status)
{
    char *call[2] = {(char *)cluster_id, NULL}; /* id, then the sealed password */
    char *password = NULL;

    *status = db_run(app->db, secret_fn, call);
    if (*status == DB_OK && call[1] != NULL &&
        (password = cluster_open_secret(app, cluster_id, call[1])) == NULL)
        *status = DB_ERROR; /* sealed with another key, or altered */
    free(call[1]);
    return password;
}
