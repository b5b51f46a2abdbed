/* tls.c -- see tls.h. */
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_nodes.h"
#include "log.h"
#include "store.h"
#include "xalloc.h"

/* The sealed keys' associated data: no cluster id can be these (a colon),
 * so no cluster's sealed password opens as a key, nor a key as one. */
#define CA_AAD       "cairn:certificate-authority"
#define HOST_KEY_AAD "cairn:host-tls-key"

struct ca_call {
    char *cert_pem, *key_hex;
    const char *new_cert, *new_key;
};

static enum db_status get_fn(struct db_conn *conn, void *arg)
{
    struct ca_call *c = arg;
    return store_ca_get(conn, &c->cert_pem, &c->key_hex);
}

static enum db_status put_fn(struct db_conn *conn, void *arg)
{
    struct ca_call *c = arg;
    return store_ca_insert(conn, c->new_cert, c->new_key);
}

/* Make an authority and store it, unless another cairnd did meanwhile. */
static enum db_status create(struct app *app, struct ca_call *c, char *err, size_t errsize)
{
    char *cert, *key;

    if (!x509_ca_create("Cairn certificate authority", TLS_CA_DAYS, &cert, &key, err, errsize))
        return DB_ERROR;
    char *sealed = cluster_seal_secret(app, CA_AAD, key);
    c->new_cert = cert;
    c->new_key = sealed;
    enum db_status st = db_run(app->db, put_fn, c);
    free(sealed);
    free(cert);
    free(key);
    if (st == DB_OK)
        log_info("certificate authority created", NULL);
    else
        snprintf(err, errsize, "could not store the certificate authority");
    return st;
}

struct x509_ca *tls_ca_open(struct app *app, char *err, size_t errsize)
{
    struct ca_call c = {0};
    struct x509_ca *ca = NULL;

    if (!app->have_secret_key) {
        snprintf(err, errsize, "the certificate authority needs cairnd's --secret-key-file");
        return NULL;
    }
    enum db_status st = db_run(app->db, get_fn, &c);
    if (st == DB_NOT_FOUND && create(app, &c, err, errsize) == DB_OK)
        st = db_run(app->db, get_fn, &c);
    else if (st == DB_NOT_FOUND)
        return NULL;
    if (st != DB_OK) {
        snprintf(err, errsize, "could not read the certificate authority from the database");
    } else {
        char *key = cluster_open_secret(app, CA_AAD, c.key_hex);
        if (key == NULL)
            snprintf(err, errsize,
                     "the certificate authority's key cannot be opened: is --secret-key-file "
                     "the one it was sealed with?");
        else
            ca = x509_ca_load(c.cert_pem, key, err, errsize);
        free(key);
    }
    free(c.cert_pem);
    free(c.key_hex);
    return ca;
}

/* A PEM file of at most 1 MiB, as a string (the caller frees it). */
static char *read_text(const char *path, char *err, size_t errsize)
{
    FILE *f = fopen(path, "r");
    char *text = xmalloc((1 << 20) + 1);
    size_t len = f != NULL ? fread(text, 1, 1 << 20, f) : 0;

    if (f == NULL || ferror(f) || len == 0 || len == 1 << 20) {
        snprintf(err, errsize, "cannot read a PEM file of at most 1 MiB from %s", path);
        free(text);
        text = NULL;
    } else {
        text[len] = '\0';
    }
    if (f != NULL)
        fclose(f);
    return text;
}

bool tls_server_pems(const struct app *app, const struct x509_ca *ca, char **cert_pem,
                     char **key_pem, char *err, size_t errsize)
{
    const struct config *cfg = &app->cfg;

    if (cfg->tls_cert_file != NULL) {
        *cert_pem = read_text(cfg->tls_cert_file, err, errsize);
        *key_pem = *cert_pem != NULL ? read_text(cfg->tls_key_file, err, errsize) : NULL;
        if (*key_pem == NULL) {
            free(*cert_pem);
            *cert_pem = NULL;
        }
        return *key_pem != NULL;
    }
    char host[256] = "", *list = xstrdup(cfg->tls_names != NULL ? cfg->tls_names : "");
    const char *names[16];
    size_t n = 0;
    char *save = NULL;
    for (char *w = strtok_r(list, ",", &save); w != NULL && n < 16; w = strtok_r(NULL, ",", &save))
        names[n++] = w;
    if (n == 0) {
        names[n++] = cfg->listen_host[0] != '\0' && strcmp(cfg->listen_host, "0.0.0.0") != 0 &&
                             strcmp(cfg->listen_host, "::") != 0
                         ? cfg->listen_host
                         : "127.0.0.1";
        names[n++] = "localhost";
        if (gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0' &&
            strcmp(host, "localhost") != 0)
            names[n++] = host;
    }
    bool ok = x509_issue(ca, names, n, TLS_SERVER_DAYS, cert_pem, key_pem, err, errsize);
    free(list);
    return ok;
}

enum db_status tls_host_certificate(struct app *app, struct db_conn *conn, const char *host_id)
{
    char *address = NULL, *cert = NULL, *key = NULL, err[256];
    enum db_status st = store_host_tls_due(conn, host_id, &address);
    time_t until = 0;

    if (st != DB_OK || app->ca == NULL) {
        free(address);
        return st == DB_NOT_FOUND ? DB_OK : st;
    }
    const char *names[1] = {address};
    if (!x509_issue(app->ca, names, 1, TLS_HOST_DAYS, &cert, &key, err, sizeof(err)) ||
        !x509_not_after(cert, &until)) {
        log_error("could not issue a host's certificate", "host=%s error=\"%s\"", host_id, err);
        st = DB_OK; /* the host keeps the one it has */
    } else {
        char *sealed = cluster_seal_secret(app, HOST_KEY_AAD, key);
        st = store_host_tls_set(conn, host_id, cert, sealed, (long long)until);
        if (st == DB_OK)
            log_info("host certificate issued", "host=%s address=%s days=%d", host_id, address,
                     TLS_HOST_DAYS);
        free(sealed);
    }
    free(cert);
    free(key);
    free(address);
    return st;
}

char *tls_open_host_key(struct app *app, const char *key_box_hex)
{
    return cluster_open_secret(app, HOST_KEY_AAD, key_box_hex);
}
