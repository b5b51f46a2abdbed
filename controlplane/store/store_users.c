/* store_users.c -- cluster_users: a cluster's tenant users beside the
 * default one (migrations/0028_cluster_users.sql). Only SHA-256 of a
 * password is kept, as the engines take it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define USER_JSON                                                                                  \
    "json_build_object('user_name', u.name, 'cluster_id', u.cluster_id,"                           \
    " 'access_string', u.access_string,"                                                           \
    " 'authentication', json_build_object('type', 'password',"                                     \
    "   'password_count', cardinality(u.password_hashes)),"                                        \
    " 'created_at', api_time(u.created_at), 'last_modified_at', api_time(u.updated_at))"

static const struct db_stmt list_users = {
    "SELECT (SELECT coalesce(json_agg(" USER_JSON " ORDER BY u.name), '[]')"
    " FROM cluster_users u WHERE u.cluster_id = c.id)::text FROM clusters c WHERE c.id = $1"};

static const struct db_stmt get_user = {"SELECT " USER_JSON "::text FROM cluster_users u"
                                        " WHERE u.cluster_id = $1 AND u.name = $2"};

static const struct db_stmt count_users = {
    "SELECT (SELECT count(*) FROM cluster_users WHERE cluster_id = c.id)::text"
    " FROM clusters c WHERE c.id = $1 AND c.status <> 'deleting'"};

static const struct db_stmt insert_user = {
    "INSERT INTO cluster_users AS u (cluster_id, name, access_string, password_hashes)"
    " VALUES ($1, $2, $3, $4::text[]) RETURNING " USER_JSON "::text"};

/* A change to what the user already is leaves it, and its time, alone. */
static const struct db_stmt update_user = {
    "UPDATE cluster_users u SET access_string = coalesce($3, access_string),"
    " password_hashes = coalesce($4::text[], password_hashes), updated_at = now()"
    " WHERE u.cluster_id = $1 AND u.name = $2"
    " AND (u.access_string, u.password_hashes) IS DISTINCT FROM"
    "     (coalesce($3, u.access_string), coalesce($4::text[], u.password_hashes))"};

static const struct db_stmt delete_user = {
    "DELETE FROM cluster_users WHERE cluster_id = $1 AND name = $2"};

/* {"a","b"}: an array literal of hashes (hex digits need no quoting). */
static void hashes_literal(const struct store_user_change *u, char *out, size_t size)
{
    snprintf(out, size, "{%s%s%s}", u->password_hashes[0], u->password_hashes[1] != NULL ? "," : "",
             u->password_hashes[1] != NULL ? u->password_hashes[1] : "");
}

enum db_status store_users_list(struct db_conn *conn, const char *cluster_id, char **out)
{
    const char *params[1] = {cluster_id};
    return store_get_text(conn, &list_users, 1, params, out);
}

enum db_status store_user_get(struct db_conn *conn, const char *cluster_id, const char *name,
                              char **out)
{
    const char *params[2] = {cluster_id, name};
    return store_get_text(conn, &get_user, 2, params, out);
}

enum db_status store_users_count(struct db_conn *conn, const char *cluster_id, long long *count)
{
    const char *params[1] = {cluster_id};
    char *text = NULL;
    enum db_status st = store_get_text(conn, &count_users, 1, params, &text);

    if (st == DB_OK)
        *count = strtoll(text, NULL, 10);
    free(text);
    return st;
}

enum db_status store_user_insert(struct db_conn *conn, const struct store_user_change *u,
                                 char **out)
{
    char hashes[2 * STORE_USER_HASH_LEN + 8];
    const char *params[4] = {u->cluster_id, u->name, u->access_string, hashes};

    hashes_literal(u, hashes, sizeof(hashes));
    return store_get_text(conn, &insert_user, 4, params, out);
}

enum db_status store_user_update(struct db_conn *conn, const struct store_user_change *u,
                                 bool *changed)
{
    char hashes[2 * STORE_USER_HASH_LEN + 8];
    const char *params[4] = {u->cluster_id, u->name, u->access_string,
                             u->password_hashes[0] != NULL ? hashes : NULL};
    enum db_status st;

    if (u->password_hashes[0] != NULL)
        hashes_literal(u, hashes, sizeof(hashes));
    PGresult *res = db_query(conn, &update_user, 4, params, &st);
    if (res == NULL)
        return st;
    *changed = strcmp(PQcmdTuples(res), "0") != 0;
    PQclear(res);
    return DB_OK;
}

enum db_status store_user_delete(struct db_conn *conn, const char *cluster_id, const char *name)
{
    return store_change(conn, &delete_user, cluster_id, name);
}
