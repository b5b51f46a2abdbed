/* store_ca.c -- certificate_authority: the one row of this installation's
 * authority (migrations/0030_certificate_authority.sql). */
#include <stdio.h>
#include <string.h>

#include "store.h"
#include "xalloc.h"

static const struct db_stmt get_ca = {
    "SELECT cert_pem, encode(key_sealed, 'hex') FROM certificate_authority"};

/* Of two cairnds making one at once, the first one stored wins. */
static const struct db_stmt insert_ca = {
    "INSERT INTO certificate_authority (cert_pem, key_sealed) VALUES ($1, $2::bytea)"
    " ON CONFLICT (id) DO NOTHING"};

enum db_status store_ca_get(struct db_conn *conn, char **cert_pem, char **key_hex)
{
    enum db_status st;
    PGresult *res = db_query(conn, &get_ca, 0, NULL, &st);

    if (res == NULL)
        return st;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return DB_NOT_FOUND;
    }
    *cert_pem = xstrdup(PQgetvalue(res, 0, 0));
    *key_hex = xstrdup(PQgetvalue(res, 0, 1));
    PQclear(res);
    return DB_OK;
}

enum db_status store_ca_insert(struct db_conn *conn, const char *cert_pem, const char *key_sealed)
{
    const char *params[2] = {cert_pem, key_sealed};
    enum db_status st;

    PQclear(db_query(conn, &insert_ca, 2, params, &st));
    return st;
}
