/* store_util.c -- helpers shared by the store_* files. */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "store.h"

static json_t *parse_cell(PGresult *res, int row, int col)
{
    json_error_t err;
    json_t *v = json_loadb(PQgetvalue(res, row, col), (size_t)PQgetlength(res, row, col), 0, &err);
    if (v == NULL)
        log_error("database returned invalid JSON", "error=\"%s\"", err.text);
    return v;
}

enum db_status store_collect(PGresult *res, int size, json_t **items, char *next_key)
{
    int rows = PQntuples(res);
    json_t *out = json_array();

    next_key[0] = '\0';
    for (int i = 0; i < rows && i < size; i++) {
        json_t *item = parse_cell(res, i, 1);
        if (item == NULL) {
            json_decref(out);
            return DB_ERROR;
        }
        json_array_append_new(out, item);
    }
    if (rows > size && size > 0)
        snprintf(next_key, PAGE_KEY_MAX, "%s", PQgetvalue(res, size - 1, 0));
    *items = out;
    return DB_OK;
}

enum db_status store_get_json(struct db_conn *conn, const struct db_stmt *stmt, int nparams,
                              const char *const *params, json_t **out)
{
    enum db_status st;
    PGresult *res = db_query(conn, stmt, nparams, params, &st);

    if (res == NULL)
        return st;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return DB_NOT_FOUND;
    }
    *out = parse_cell(res, 0, 0);
    PQclear(res);
    return *out != NULL ? DB_OK : DB_ERROR;
}

enum db_status store_list(struct db_conn *conn, const struct db_stmt *stmt, int nparams,
                          const char **params, const struct page *page, json_t **items,
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
