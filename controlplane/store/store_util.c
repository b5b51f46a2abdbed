/* store_util.c -- helpers shared by the store_* files. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store.h"
#include "xalloc.h"

enum db_status store_collect(PGresult *res, int size, char **items, char *next_key)
{
    int rows = PQntuples(res) < size ? PQntuples(res) : size;
    size_t len = 2, o = 0;
    char *out;

    for (int i = 0; i < rows; i++)
        len += (size_t)PQgetlength(res, i, 1) + 1;
    out = xmalloc(len + 1);
    out[o++] = '[';
    for (int i = 0; i < rows; i++) {
        size_t n = (size_t)PQgetlength(res, i, 1);
        if (i > 0)
            out[o++] = ',';
        memcpy(out + o, PQgetvalue(res, i, 1), n);
        o += n;
    }
    out[o++] = ']';
    out[o] = '\0';
    next_key[0] = '\0';
    if (PQntuples(res) > size && size > 0)
        snprintf(next_key, PAGE_KEY_MAX, "%s", PQgetvalue(res, size - 1, 0));
    *items = out;
    return DB_OK;
}

enum db_status store_get_text(struct db_conn *conn, const struct db_stmt *stmt, int nparams,
                              const char *const *params, char **out)
{
    enum db_status st;
    PGresult *res = db_query(conn, stmt, nparams, params, &st);

    if (res == NULL)
        return st;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return DB_NOT_FOUND;
    }
    *out = xstrdup(PQgetvalue(res, 0, 0));
    PQclear(res);
    return DB_OK;
}

enum db_status store_get_json(struct db_conn *conn, const struct db_stmt *stmt, int nparams,
                              const char *const *params, json_t **out)
{
    json_error_t err;
    char *text = NULL;
    enum db_status st = store_get_text(conn, stmt, nparams, params, &text);

    if (st != DB_OK)
        return st;
    *out = json_loads(text, 0, &err);
    free(text);
    if (*out == NULL) {
        log_error("database returned invalid JSON", "error=\"%s\"", err.text);
        return DB_ERROR;
    }
    return DB_OK;
}

void store_copy_text(char *dst, size_t size, const PGresult *res, int row, int col)
{
    const char *text = db_text(res, row, col);
    snprintf(dst, size, "%s", text != NULL ? text : "");
}

/* One count: its labels, then the count. */
static void read_count(const PGresult *res, int row, void *item)
{
    struct store_count *c = item;
    int nlabels = PQnfields(res) - 1;
    assert(nlabels >= 1 && nlabels <= 2);
    for (int k = 0; k < nlabels; k++)
        store_copy_text(c->labels[k], sizeof(c->labels[k]), res, row, k);
    c->n = db_int(res, row, nlabels);
}

enum db_status store_count_rows(struct db_conn *conn, const struct db_stmt *stmt,
                                struct store_counts *out)
{
    enum db_status st;
    out->items = store_read_rows(conn, stmt, NULL, sizeof(*out->items), read_count, &out->n, &st);
    return st;
}

enum db_status store_query_row(struct db_conn *conn, const struct db_stmt *stmt,
                               const struct db_params *p, PGresult **res)
{
    enum db_status st;
    *res = db_query_params(conn, stmt, p, &st);
    if (*res == NULL || PQntuples(*res) == 1)
        return st;
    PQclear(*res);
    *res = NULL;
    return DB_NOT_FOUND;
}

enum db_status store_list(struct db_conn *conn, const struct db_stmt *stmt, int nparams,
                          const char **params, const struct page *page, char **items,
                          char *next_key)
{
    char limit[16];
    enum db_status st;

    snprintf(limit, sizeof(limit), "%d", page->size + 1);
    params[nparams - 1] = limit;
    PGresult *res = db_query(conn, stmt, nparams, params, &st);
    if (res == NULL)
        return st;
    st = store_collect(res, page->size, items, next_key);
    PQclear(res);
    return st;
}

enum db_status store_get_int64(struct db_conn *conn, const struct db_stmt *stmt, int nparams,
                               const char *const *params, long long *out)
{
    enum db_status st;
    PGresult *res = db_query(conn, stmt, nparams, params, &st);

    if (res == NULL)
        return st;
    st = PQntuples(res) == 1 ? DB_OK : DB_NOT_FOUND;
    if (st == DB_OK)
        *out = atoll(PQgetvalue(res, 0, 0));
    PQclear(res);
    return st;
}

enum db_status store_exec(struct db_conn *conn, const struct db_stmt *stmt, const char *a,
                          const char *b)
{
    const char *params[2] = {a, b};
    enum db_status st;
    PQclear(db_query(conn, stmt, b != NULL ? 2 : 1, params, &st));
    return st;
}

enum db_status store_change(struct db_conn *conn, const struct db_stmt *stmt, const char *a,
                            const char *b)
{
    const char *params[2] = {a, b};
    enum db_status st;
    PGresult *res = db_query(conn, stmt, b != NULL ? 2 : 1, params, &st);

    if (res == NULL)
        return st;
    st = strcmp(PQcmdTuples(res), "0") == 0 ? DB_NOT_FOUND : DB_OK;
    PQclear(res);
    return st;
}

char *store_dup_text(const PGresult *res, int row, int col)
{
    const char *text = db_text(res, row, col);
    return text != NULL ? xstrdup(text) : NULL;
}

/* p, or no parameters for NULL. */
static const struct db_params *or_none(const struct db_params *p)
{
    static const struct db_params none = {0};
    return p != NULL ? p : &none;
}

enum db_status store_read_row(struct db_conn *conn, const struct db_stmt *stmt,
                              const struct db_params *p, store_read_fn read, void *out)
{
    PGresult *res;
    enum db_status st = store_query_row(conn, stmt, or_none(p), &res);
    if (st != DB_OK)
        return st;
    read(res, 0, out);
    PQclear(res);
    return DB_OK;
}

/* Read the first n rows of res with read into items. */
static void read_each(const PGresult *res, store_read_fn read, void *items, size_t item_size,
                      size_t n)
{
    for (size_t i = 0; i < n; i++)
        read(res, (int)i, (char *)items + i * item_size);
}

void *store_read_rows(struct db_conn *conn, const struct db_stmt *stmt, const struct db_params *p,
                      size_t item_size, store_read_fn read, size_t *n, enum db_status *status)
{
    PGresult *res = db_query_params(conn, stmt, or_none(p), status);
    *n = 0;
    if (res == NULL)
        return NULL;
    *n = (size_t)PQntuples(res);
    void *items = xcalloc(*n + 1, item_size);
    read_each(res, read, items, item_size, *n);
    PQclear(res);
    return items;
}

enum db_status store_read_into(struct db_conn *conn, const struct db_stmt *stmt,
                               const struct db_params *p, store_read_fn read, void *items,
                               size_t item_size, size_t max, size_t *n)
{
    enum db_status st;
    PGresult *res = db_query_params(conn, stmt, or_none(p), &st);
    if (res == NULL)
        return st;
    *n = (size_t)PQntuples(res) < max ? (size_t)PQntuples(res) : max;
    read_each(res, read, items, item_size, *n);
    PQclear(res);
    return DB_OK;
}

enum db_status store_insert_id(struct db_conn *conn, const struct db_stmt *stmt,
                               const struct db_params *p, char *id)
{
    PGresult *res;
    enum db_status st = store_query_row(conn, stmt, p, &res);
    if (st != DB_OK)
        return st;
    store_copy_text(id, STORE_UUID_SIZE, res, 0, 0);
    PQclear(res);
    return DB_OK;
}

void store_split_key(const struct page *page, char *buf, const char **time, const char **id)
{
    *time = *id = NULL;
    if (!page->has_after)
        return;
    strcpy(buf, page->after);
    char *bar = strchr(buf, '|');
    *bar = '\0';
    *time = buf;
    *id = bar + 1;
}
