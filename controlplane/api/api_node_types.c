/* api_node_types.c -- GET /v1/node-types and /v1/node-types/{name}: the
 * catalog of node shapes and prices.
 *
 * The catalog changes only with a migration, so each cairnd reads it from
 * the database once, at the first request that needs it, and answers from
 * memory after that: a dashboard or a Terraform plan polling it costs no
 * round trip. (A cairnd whose schema a newer one has moved ahead is drained
 * by its /readyz, the catalog it holds with it.) */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "strbuf.h"
#include "xalloc.h"

static struct {
    pthread_mutex_t lock;             /* held while it is read */
    _Atomic bool loaded;              /* set once the rows are in, never cleared */
    struct store_node_type_row *rows; /* in catalog order; keys ascending */
    size_t n;
} catalog = {.lock = PTHREAD_MUTEX_INITIALIZER};

static enum db_status load_fn(struct db_conn *conn, void *arg)
{
    (void)arg;
    return store_node_types_all(conn, &catalog.rows, &catalog.n);
}

/* The catalog, read on first use (false: the database could not say; *st
 * why). The rows never change once read, so a request after that takes no
 * lock. */
static bool catalog_loaded(struct app *app, enum db_status *st)
{
    *st = DB_OK;
    if (catalog.loaded)
        return true;
    pthread_mutex_lock(&catalog.lock);
    if (!catalog.loaded) {
        *st = db_run(app->db, load_fn, NULL);
        if (*st == DB_OK) {
            catalog.loaded = true; /* after the rows: a reader that sees it sees them */
        } else {
            store_node_type_rows_free(catalog.rows, catalog.n);
            catalog.rows = NULL;
            catalog.n = 0;
        }
    }
    pthread_mutex_unlock(&catalog.lock);
    return *st == DB_OK;
}

static const struct api_list node_types = {"node_types", "node-types", PAGE_KEY_INT, NULL};

void api_node_types_list(struct http_request *req)
{
    struct page page;
    enum db_status st;
    struct strbuf items;
    char next_key[PAGE_KEY_MAX] = "";

    if (!api_page_parse(req, &node_types, &page))
        return;
    if (!catalog_loaded(req->app, &st)) {
        http_reply_db_error(req, st);
        return;
    }
    long long after = page.has_after ? strtoll(page.after, NULL, 10) : -1;
    size_t i = 0, taken = 0;
    while (i < catalog.n && strtoll(catalog.rows[i].key, NULL, 10) <= after)
        i++;
    strbuf_init(&items, 4096);
    strbuf_printf(&items, "[");
    for (; i < catalog.n && taken < (size_t)page.size; i++, taken++)
        strbuf_printf(&items, "%s%s", taken > 0 ? ", " : "", catalog.rows[i].doc);
    strbuf_printf(&items, "]");
    if (i < catalog.n && taken > 0)
        snprintf(next_key, sizeof(next_key), "%s", catalog.rows[i - 1].key);
    api_reply_page(req, &node_types, items.p, next_key);
}

void api_node_types_get(struct http_request *req)
{
    const char *name = http_param(req, "name");
    enum db_status st;

    if (!catalog_loaded(req->app, &st)) {
        http_reply_db_error(req, st);
        return;
    }
    for (size_t i = 0; i < catalog.n; i++) {
        if (strcmp(catalog.rows[i].name, name) == 0) {
            http_reply_json_text(req, 200, xstrdup(catalog.rows[i].doc));
            return;
        }
    }
    http_reply_problem(req, PROBLEM_NODE_TYPE_NOT_FOUND, NULL, "%s does not exist", name);
}
