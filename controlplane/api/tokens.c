/* tokens.c -- token creation and revocation rules. */
#include "tokens.h"

#include <stdio.h>
#include <string.h>

#include "store.h"

static const char *const scopes[] = {"admin", "read", NULL};

static bool check_token_name(const json_t *value, char *msg, size_t msgsize)
{
    const char *s = json_string_value(value);
    if (strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == strlen(s))
        return true;
    snprintf(msg, msgsize, "may contain only letters, digits, '.', '_' and '-'");
    return false;
}

const struct jspec_field tokens_create_spec[] = {
    {.name = "name",
     .type = JSPEC_STRING,
     .required = true,
     .min_len = 1,
     .max_len = TOKENS_NAME_MAX,
     .check = check_token_name},
    {.name = "scope", .type = JSPEC_STRING, .required = true, .one_of = scopes},
    {.name = "host_details", .type = JSPEC_BOOLEAN, .nullable = true},
    {.name = "expires_in_days",
     .type = JSPEC_INTEGER,
     .nullable = true,
     .has_range = true,
     .min = 1,
     .max = TOKENS_EXPIRY_DAYS_MAX},
    {0},
};

bool tokens_grant_parse(const json_t *body, struct store_token_grant *out, char *msg,
                        size_t msgsize)
{
    const json_t *days = json_object_get(body, "expires_in_days");
    const json_t *hosts = json_object_get(body, "host_details");

    out->name = json_string_value(json_object_get(body, "name"));
    (void)auth_scope_parse(json_string_value(json_object_get(body, "scope")), &out->scope);
    out->expires_in_days = json_is_integer(days) ? (int)json_integer_value(days) : 0;
    out->host_details = out->scope == TOKEN_SCOPE_ADMIN || json_is_true(hosts);
    if (out->scope == TOKEN_SCOPE_ADMIN && json_is_false(hosts)) {
        snprintf(msg, msgsize, "an admin token always sees host details: it can list the hosts");
        return false;
    }
    return true;
}

struct create_call {
    const unsigned char *key;
    const struct store_token_grant *grant;
    struct auth_token token;
    json_t *out;
};

static enum db_status create_fn(struct db_conn *conn, void *arg)
{
    struct create_call *c = arg;
    json_decref(c->out);
    c->out = NULL;
    /* A fresh id each attempt: a clash on the 48-bit id is retried. */
    auth_token_new(&c->token);
    unsigned char sealed[STORE_TOKEN_SEALED_LEN];
    if (c->key != NULL) {
        char label[AUTH_ID_LEN + 11];
        tokens_seal_label(c->token.id, label);
        secretbox_seal(c->key, tokens_secret_part(&c->token), AUTH_SECRET_LEN, label, sealed);
    }
    return store_token_insert(conn, &c->token, c->grant, c->key != NULL ? sealed : NULL, &c->out);
}

const char *tokens_secret_part(const struct auth_token *token)
{
    return token->text + strlen(AUTH_PREFIX) + AUTH_ID_LEN + 1;
}

void tokens_seal_label(const char *id, char out[AUTH_ID_LEN + 11])
{
    snprintf(out, AUTH_ID_LEN + 11, "api-token:%s", id);
}

enum db_status tokens_create(struct db_pool *pool, const unsigned char *key,
                             const struct store_token_grant *grant, json_t **out)
{
    struct create_call call = {.key = key, .grant = grant};
    enum db_status st = DB_CONFLICT;

    for (int attempt = 0; attempt < 3 && st == DB_CONFLICT; attempt++)
        st = db_tx(pool, DB_READ_COMMITTED, create_fn, &call);
    if (st != DB_OK) {
        json_decref(call.out);
        return st;
    }
    json_object_set_new(call.out, "token", json_string(call.token.text));
    if (key != NULL) {
        json_object_set_new(call.out, "access_key_id", json_string(call.token.id));
        json_object_set_new(call.out, "secret_access_key",
                            json_string(tokens_secret_part(&call.token)));
    }
    *out = call.out;
    return DB_OK;
}

struct revoke_call {
    const char *id;
};

static enum db_status revoke_fn(struct db_conn *conn, void *arg)
{
    struct revoke_call *c = arg;
    return store_token_revoke(conn, c->id);
}

enum db_status tokens_revoke(struct db_pool *pool, const char *id)
{
    struct revoke_call call = {id};
    return db_tx(pool, DB_READ_COMMITTED, revoke_fn, &call);
}
