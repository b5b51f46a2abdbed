/* api_health.c -- GET /healthz (the process answers) and GET /readyz (the
 * database answers and its schema is the one this binary expects). */
#include "api.h"
#include "migrate.h"
#include "monitor.h"
#include "x509.h"
#include "xalloc.h"

void api_healthz(struct http_request *req)
{
    http_reply_json(req, 200, json_pack("{s:s}", "status", "ok"));
}

struct ready_call {
    enum migrate_state state;
    int version;
};

static enum db_status ready_fn(struct db_conn *conn, void *arg)
{
    struct ready_call *c = arg;
    c->state = migrate_state(db_pgconn(conn), &c->version);
    return c->state == MIGRATE_UNKNOWN ? DB_UNAVAILABLE : DB_OK;
}

void api_readyz(struct http_request *req)
{
    struct ready_call call = {MIGRATE_UNKNOWN, 0};
    enum db_status st = db_run(req->app->db, ready_fn, &call);

    if (st != DB_OK)
        http_reply_problem(req, PROBLEM_NOT_READY, NULL, "the database cannot be reached");
    else if (call.state == MIGRATE_BEHIND)
        http_reply_problem(req, PROBLEM_NOT_READY, NULL,
                           "database schema is at version %d; this cairnd needs %d (run 'cairnd "
                           "migrate')",
                           call.version, migrate_latest());
    else if (call.state == MIGRATE_AHEAD)
        http_reply_problem(req, PROBLEM_NOT_READY, NULL,
                           "database schema is at version %d, newer than this cairnd (%d)",
                           call.version, migrate_latest());
    else {
        long long term = monitor_leader_term(req->app->monitor);
        json_t *body = json_pack("{s:s, s:i, s:b}", "status", "ready", "schema_version",
                                 call.version, "leader", term != 0);
        if (term != 0)
            json_object_set_new(body, "leader_term", json_integer(term));
        http_reply_json(req, 200, body);
    }
}

/* GET /v1/ca-certificate: the certificate of Cairn's certificate authority,
 * which clients trust cairnd's HTTPS by (and, with transit encryption,
 * the engines). Public, as it must be to bootstrap that trust; without a
 * secret key cairnd has no authority. */
void api_ca_certificate(struct http_request *req)
{
    if (req->app->ca == NULL)
        http_reply_problem(req, PROBLEM_SECRET_KEY_UNAVAILABLE, NULL,
                           "cairnd has no certificate authority: it runs without "
                           "--secret-key-file, or with another key than the one the "
                           "authority's was sealed with");
    else
        http_reply_text(req, 200, xstrdup(x509_ca_cert_pem(req->app->ca)),
                        "application/x-pem-file");
}
