/* main.c -- cairnd's command line: serve (the default), migrate, token
 * create|list|revoke, the lists the contract tests compare with the
 * documents (routes, engines, operation-kinds, managed-settings, changes) and
 * version. */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "catalog.h"
#include "changes.h"
#include "config.h"
#include "engine_config.h"
#include "log.h"
#include "migrate.h"
#include "monitor.h"
#include "nodeio.h"
#include "notify.h"
#include "ratelimit.h"
#include "ops.h"
#include "runner.h"
#include "secretbox.h"
#include "snapshot_store.h"
#include "tls.h"
#include "token_cache.h"
#include "sentinel.h"
#include "tokens.h"
#include "version.h"

/* The usage message, its flags and variables from config.c's table. */
static void print_usage(FILE *out)
{
    struct usage u;

    usage_start(&u, out, "usage: cairnd [serve]", strlen("usage: cairnd "));
    config_usage_flags(&u);
    usage_end(&u);
    fputs("       cairnd migrate [--database-url URL]\n"
          "       cairnd token create --name NAME --scope admin|read [--database-url URL]\n"
          "       cairnd token list [--database-url URL]\n"
          "       cairnd token revoke ID [--database-url URL]\n"
          "       cairnd ca-certificate --secret-key-file PATH [--database-url URL]\n"
          "       cairnd routes | engines | operation-kinds | managed-settings | changes\n"
          "       cairnd version\n",
          out);
    config_usage_env(out);
}

/* Options shared by every subcommand; --name and --scope only mean
 * something to `token create`. */
struct cli {
    struct config cfg;
    const char *name;
    const char *scope;
    char **args; /* positional arguments after the subcommand */
    int nargs;
};

static int fail(const char *fmt, const char *arg)
{
    fprintf(stderr, "cairnd: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 1;
}

/* The console beside cairnd: <directory of the binary>/../share/cairn/web
 * when that is a directory (cairnd installed by `make install`), else
 * <directory of the binary>/../build/web (bin/cairnd in a checkout, where
 * `make` assembles the console). NULL when the binary's path cannot be
 * read. */
static const char *default_web_root(void)
{
    static const char installed[] = "/../share/cairn/web", checkout[] = "/../build/web";
    static char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - sizeof(installed));
    struct stat st;

    if (n <= 0 || (size_t)n >= sizeof(path) - sizeof(installed))
        return NULL;
    path[n] = '\0';
    char *dir_end = strrchr(path, '/');
    strcpy(dir_end, installed);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return path;
    strcpy(dir_end, checkout);
    return path;
}

static bool parse_cli(int argc, char **argv, struct cli *cli)
{
    /* Besides the settings: token create's two, and --help. */
    static const struct option own[] = {
        {"name", required_argument, NULL, 'n'},
        {"scope", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
    };
    struct option *options = config_options(own, sizeof(own) / sizeof(own[0]));
    bool ok = true;
    char err[256];
    int idx, c;

    if (!config_from_env(&cli->cfg, err, sizeof(err))) {
        free(options);
        fail("%s", err);
        return false;
    }
    while (ok && (c = getopt_long(argc, argv, "h", options, &idx)) != -1) {
        switch (c) {
        case 0:
            ok = config_set(&cli->cfg, options[idx].name, optarg, err, sizeof(err));
            if (!ok)
                fail("%s", err);
            break;
        case 'n':
            cli->name = optarg;
            break;
        case 's':
            cli->scope = optarg;
            break;
        case 'h':
            print_usage(stdout);
            exit(0);
        default:
            print_usage(stderr);
            ok = false;
            break;
        }
    }
    free(options);
    if (!ok)
        return false;
    if (cli->cfg.db_pool_size == 0)
        cli->cfg.db_pool_size = 3 * cli->cfg.http_threads + 2; /* connections, two worker pools */
    /* A held sync does not count as a heartbeat: hold it well within the
     * timeout, or healthy hosts would be declared lost while they wait. By
     * default 2 s, or half the timeout when that is shorter. */
    if (cli->cfg.sync_wait_ms < 0) {
        int half = cli->cfg.heartbeat_timeout_s * 500;
        cli->cfg.sync_wait_ms = half < 2000 ? half : 2000;
    } else if (cli->cfg.sync_wait_ms * 2 > cli->cfg.heartbeat_timeout_s * 1000) {
        fail("%s", "--sync-wait-ms must be at most half of --heartbeat-timeout");
        return false;
    }
    if (cli->cfg.web_root == NULL)
        cli->cfg.web_root = default_web_root();
    cli->args = argv + optind;
    cli->nargs = argc - optind;
    return true;
}

static PGconn *connect_or_complain(const struct config *cfg)
{
    char err[512];
    PGconn *pg;

    if (cfg->database_url == NULL) {
        fail("%s", "no database: set CAIRN_DATABASE_URL or pass --database-url");
        return NULL;
    }
    pg = db_connect(cfg->database_url, err, sizeof(err));
    if (pg == NULL)
        fail("%s", err);
    return pg;
}

/* Bring the schema up to date, or with --no-migrate only make sure the
 * database is not newer than this binary. */
static bool prepare_schema(const struct config *cfg, bool no_migrate)
{
    char err[512];
    int version = 0, applied = 0;
    PGconn *pg = connect_or_complain(cfg);
    bool ok = true;

    if (pg == NULL)
        return false;
    if (no_migrate) {
        enum migrate_state state = migrate_state(pg, &version);
        if (state == MIGRATE_AHEAD) {
            snprintf(err, sizeof(err),
                     "database schema is at version %d, newer than this cairnd knows (%d); "
                     "run a newer cairnd",
                     version, migrate_latest());
            ok = false;
        } else if (state == MIGRATE_BEHIND) {
            log_warn("database schema is behind; /readyz reports not ready until 'cairnd "
                     "migrate' runs",
                     "schema_version=%d wanted=%d", version, migrate_latest());
        }
    } else if (migrate_apply(pg, &version, &applied, err, sizeof(err))) {
        if (applied > 0)
            log_info("schema migrated", "schema_version=%d applied=%d", version, applied);
    } else {
        ok = false;
    }
    if (!ok)
        fail("%s", err);
    PQfinish(pg);
    return ok;
}

/* Descriptors cairnd holds besides HTTP connections, the database pool and
 * the Sentinel listener's clients (counted apart): engine connections of
 * the runner and the failover checks, logs, pipes, epoll. */
#define OTHER_DESCRIPTORS 512

/* Every HTTP connection holds a descriptor, and running out of them stops
 * cairnd accepting any (agents and health probes included). Raise the
 * soft limit as far as the hard one allows, then make sure
 * --max-connections with its reserve fits below it, or lower it and say
 * so. */
static void fit_descriptors(struct config *cfg)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0)
            return;
    }
    long long room = rl.rlim_cur == RLIM_INFINITY ? 1LL << 30 : (long long)rl.rlim_cur;
    long long spare = room - OTHER_DESCRIPTORS - cfg->db_pool_size - cfg->sentinel_max_clients -
                      HTTP_RESERVED_CONNECTIONS;
    if (cfg->max_connections > spare) {
        int fitted = spare > 16 ? (int)spare : 16;
        log_warn("too few file descriptors for --max-connections; lowered",
                 "max_connections=%d lowered_to=%d nofile=%lld", cfg->max_connections, fitted,
                 room);
        cfg->max_connections = fitted;
    }
}

/* Say where the console's files come from, and warn when that is not a
 * directory: every console page answers 404 until it is one. */
static void report_web_root(const char *root)
{
    char quoted[PATH_MAX];
    struct stat st;

    if (root == NULL || root[0] == '\0')
        log_info("web console off", NULL);
    else if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode))
        log_warn("the web root is not a directory: the console is not served", "web_root=%s",
                 log_quote(quoted, sizeof(quoted), root));
    else
        log_info("web console", "web_root=%s", log_quote(quoted, sizeof(quoted), root));
}

/* The Sentinel-compatible listener, unless it is off; NULL without one. */
static struct sentinel *start_sentinel(struct app *app)
{
    char err[512];
    struct sentinel *sentinel = NULL;

    if (app->cfg.sentinel_host[0] == '\0')
        return NULL;
    sentinel =
        sentinel_start(app, app->cfg.sentinel_host, app->cfg.sentinel_port, err, sizeof(err));
    if (sentinel == NULL)
        log_warn("Sentinel-compatible discovery is off", "error=\"%s\"", err);
    else
        log_info("sentinel listening", "address=%s:%d", app->cfg.sentinel_host,
                 sentinel_port(sentinel));
    return sentinel;
}

/* The certificate authority whenever cairnd has a secret key, and with
 * --tls (or an operator's certificate) the HTTPS certificate. Without the
 * authority (another secret key than the one it was sealed with) cairnd
 * still serves what needs none, as it does clusters whose passwords it
 * cannot open; HTTPS by the authority's certificate it cannot. */
static bool open_tls(struct app *app, char *err, size_t errsize)
{
    bool https = app->cfg.tls || app->cfg.tls_cert_file != NULL;

    if (app->have_secret_key && (app->ca = tls_ca_open(app, err, errsize)) == NULL) {
        if (app->cfg.tls && app->cfg.tls_cert_file == NULL)
            return false;
        log_error("no certificate authority: clusters with transit encryption are out of reach",
                  "error=\"%s\"", err);
    }
    if (app->ca != NULL) {
        app->engine_tls = resp_tls_new(x509_ca_cert_pem(app->ca), err, errsize);
        if (app->engine_tls == NULL)
            return false;
        nodeio_use_tls(app->engine_tls);
    }
    if (!https)
        return true;
    if (app->ca == NULL && app->cfg.tls_cert_file == NULL) {
        snprintf(err, errsize,
                 "--tls needs --secret-key-file (its certificate authority's key is "
                 "sealed with it), or --tls-cert-file and --tls-key-file");
        return false;
    }
    return tls_server_pems(app, app->ca, &app->tls_cert_pem, &app->tls_key_pem, err, errsize);
}

static void close_tls(struct app *app)
{
    x509_ca_free(app->ca);
    app->ca = NULL;
    nodeio_use_tls(NULL);
    resp_tls_free(app->engine_tls);
    app->engine_tls = NULL;
    free(app->tls_cert_pem);
    free(app->tls_key_pem);
    app->tls_cert_pem = app->tls_key_pem = NULL;
}

/* The snapshot store --snapshot-store names; an s3:// one takes its
 * credentials from the environment, as the AWS tools do. */
static bool open_snapshot_store(struct app *app, char *err, size_t errsize)
{
    struct snapshot_s3_config s3 = {
        .endpoint = app->cfg.snapshot_s3_endpoint,
        .region = app->cfg.snapshot_s3_region,
        .access_key = getenv("AWS_ACCESS_KEY_ID"),
        .secret_key = getenv("AWS_SECRET_ACCESS_KEY"),
        .ca_file = getenv("AWS_CA_BUNDLE"),
    };
    app->snapshots = snapshot_store_open(app->cfg.snapshot_store, &s3, err, errsize);
    if (app->snapshots == NULL)
        return false;
    log_info("snapshot store", "kind=%s where=%s", snapshot_store_kind(app->snapshots),
             snapshot_store_where(app->snapshots));
    return true;
}

static int cmd_serve(struct cli *cli)
{
    struct app app = {.cfg = cli->cfg};
    struct http_server *server;
    sigset_t stop;
    char err[512];
    int sig;

    if (!prepare_schema(&app.cfg, app.cfg.no_migrate))
        return 1;
    /* The key that seals engine passwords: made on first use, then kept. */
    if (app.cfg.secret_key_file != NULL) {
        if (!secretbox_key_load(app.cfg.secret_key_file, true, app.secret_key, err, sizeof(err)))
            return fail("%s", err);
        app.have_secret_key = true;
    }
    if ((app.cfg.tls_cert_file != NULL) != (app.cfg.tls_key_file != NULL))
        return fail("%s", "--tls-cert-file and --tls-key-file go together");
    if (app.cfg.snapshot_store != NULL && !open_snapshot_store(&app, err, sizeof(err)))
        return fail("%s", err);
    /* Block the stop signals before any thread starts, so every thread
     * inherits the mask and only sigwait() below sees them. */
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    fit_descriptors(&app.cfg);
    app.db = db_pool_new(app.cfg.database_url, app.cfg.db_pool_size);
    app.limits = ratelimit_new(app.cfg.rate_limit, app.cfg.rate_limit_burst);
    app.tokens = token_cache_new();
    /* Made before the threads that poke it and ask it whether a host's
     * loss can be trusted; started once cairnd listens (see monitor.h). */
    app.monitor = monitor_new(&app, app.cfg.heartbeat_timeout_s);
    if (!open_tls(&app, err, sizeof(err))) {
        monitor_free(app.monitor);
        ratelimit_free(app.limits);
        token_cache_free(app.tokens);
        db_pool_free(app.db);
        return fail("%s", err);
    }
    server = http_start(&app, api_routes, api_route_count, err, sizeof(err));
    if (server == NULL) {
        close_tls(&app);
        token_cache_free(app.tokens);
        monitor_free(app.monitor);
        ratelimit_free(app.limits);
        db_pool_free(app.db);
        return fail("%s", err);
    }
    app.http = server; /* the monitor asks it how far behind its agents cairnd is */
    struct notify *notify = notify_start(app.cfg.database_url, server, app.tokens, app.monitor);
    app.runner = runner_start(&app, op_kinds);
    struct sentinel *sentinel = start_sentinel(&app);
    monitor_start(app.monitor);
    report_web_root(app.cfg.web_root);
    log_info("listening",
             "address=%s:%d scheme=%s threads=%d db_pool=%d max_connections=%d agents=%s "
             "version=%s",
             app.cfg.listen_host, app.cfg.listen_port, app.tls_cert_pem != NULL ? "https" : "http",
             app.cfg.http_threads, app.cfg.db_pool_size, app.cfg.max_connections,
             app.cfg.agent_bootstrap_token != NULL ? "enabled" : "disabled", CAIRN_VERSION);
    sigwait(&stop, &sig);
    log_info("shutting down", "signal=%s timeout_s=%d", sig == SIGTERM ? "SIGTERM" : "SIGINT",
             app.cfg.shutdown_timeout_s);
    monitor_stop(app.monitor);
    if (sentinel != NULL)
        sentinel_stop(sentinel);
    runner_stop(app.runner);
    app.runner = NULL;
    notify_stop(notify); /* before the server it wakes goes away */
    http_stop(server, app.cfg.shutdown_timeout_s);
    monitor_free(app.monitor); /* after every thread that may ask it */
    app.monitor = NULL;
    ratelimit_free(app.limits);
    token_cache_free(app.tokens);
    db_pool_free(app.db);
    close_tls(&app);
    snapshot_store_close(app.snapshots);
    log_info("stopped", NULL);
    return 0;
}

static int cmd_migrate(struct cli *cli)
{
    char err[512];
    int version = 0, applied = 0;
    PGconn *pg = connect_or_complain(&cli->cfg);

    if (pg == NULL)
        return 1;
    bool ok = migrate_apply(pg, &version, &applied, err, sizeof(err));
    PQfinish(pg);
    if (!ok)
        return fail("%s", err);
    printf("schema at version %d (applied %d)\n", version, applied);
    return 0;
}

static int cmd_token_create(struct cli *cli, struct db_pool *pool)
{
    json_t *body, *errors = json_array(), *created = NULL;
    struct store_token_grant grant;

    body = json_pack("{s:s?, s:s?}", "name", cli->name, "scope", cli->scope);
    if (!jspec_check(body, tokens_create_spec, errors)) {
        size_t i;
        json_t *e;
        json_array_foreach (errors, i, e) {
            fprintf(stderr, "cairnd: --%s %s\n", json_string_value(json_object_get(e, "field")),
                    json_string_value(json_object_get(e, "message")));
        }
        json_decref(body);
        json_decref(errors);
        return 2;
    }
    json_decref(errors);
    char err[512];
    if (!tokens_grant_parse(body, &grant, err, sizeof(err))) {
        json_decref(body);
        return fail("%s", err);
    }
    /* With cairnd's key the token can also sign requests (SigV4). */
    unsigned char key[SECRETBOX_KEY_LEN];
    if (cli->cfg.secret_key_file != NULL &&
        !secretbox_key_load(cli->cfg.secret_key_file, true, key, err, sizeof(err))) {
        json_decref(body);
        return fail("%s", err);
    }
    enum db_status st =
        tokens_create(pool, cli->cfg.secret_key_file != NULL ? key : NULL, &grant, &created);
    json_decref(body);
    if (st != DB_OK)
        return fail("%s", "could not store the token (see the log above)");
    printf("%s\n", json_string_value(json_object_get(created, "token")));
    if (json_object_get(created, "secret_access_key") != NULL)
        fprintf(stderr,
                "as AWS credentials: access key id %s, secret access key: the part after "
                "\"cairn_%s_\"\n",
                json_string_value(json_object_get(created, "id")),
                json_string_value(json_object_get(created, "id")));
    fprintf(stderr, "created %s token %s (%s); it is shown only once\n", cli->scope,
            json_string_value(json_object_get(created, "id")), cli->name);
    json_decref(created);
    return 0;
}

static const char *or_dash(json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : "-";
}

static int cmd_token_list(struct db_pool *pool)
{
    struct page page = {.size = PAGE_SIZE_MAX};
    char next[PAGE_KEY_MAX];
    char *text;
    json_t *items, *t;
    size_t i;

    printf("%-12s  %-24s  %-5s  %-27s  %-27s  %s\n", "ID", "NAME", "SCOPE", "CREATED", "LAST_USED",
           "REVOKED");
    do {
        if (api_fetch_page(pool, &api_tokens_listing, NULL, &page, &text, next) != DB_OK)
            return fail("%s", "could not list tokens (see the log above)");
        items = json_loads(text, 0, NULL);
        free(text);
        json_array_foreach (items, i, t) {
            printf("%-12s  %-24s  %-5s  %-27s  %-27s  %s\n", or_dash(json_object_get(t, "id")),
                   or_dash(json_object_get(t, "name")), or_dash(json_object_get(t, "scope")),
                   or_dash(json_object_get(t, "created_at")),
                   or_dash(json_object_get(t, "last_used_at")),
                   or_dash(json_object_get(t, "revoked_at")));
        }
        json_decref(items);
        page.has_after = next[0] != '\0';
        strcpy(page.after, next);
    } while (page.has_after);
    return 0;
}

static int cmd_token(struct cli *cli)
{
    const char *sub = cli->nargs > 0 ? cli->args[0] : "";
    struct db_pool *pool;
    int rc;

    if (strcmp(sub, "create") != 0 && strcmp(sub, "list") != 0 && strcmp(sub, "revoke") != 0) {
        print_usage(stderr);
        return 2;
    }
    if (strcmp(sub, "revoke") == 0 && cli->nargs != 2)
        return fail("%s", "usage: cairnd token revoke ID");
    if (!prepare_schema(&cli->cfg, false))
        return 1;
    pool = db_pool_new(cli->cfg.database_url, 1);
    if (strcmp(sub, "create") == 0) {
        rc = cmd_token_create(cli, pool);
    } else if (strcmp(sub, "list") == 0) {
        rc = cmd_token_list(pool);
    } else {
        enum db_status st = tokens_revoke(pool, cli->args[1]);
        rc = st == DB_OK          ? 0
             : st == DB_NOT_FOUND ? fail("no active token has id %s", cli->args[1])
                                  : fail("%s", "could not revoke (see the log above)");
        if (rc == 0)
            fprintf(stderr, "revoked token %s\n", cli->args[1]);
    }
    db_pool_free(pool);
    return rc;
}

/* Print the certificate authority's certificate (made if there is none
 * yet), for agents' --cairnd-ca-file and clients' trust. */
static int cmd_ca_certificate(struct cli *cli)
{
    struct app app = {.cfg = cli->cfg};
    char err[512];

    if (app.cfg.secret_key_file == NULL)
        return fail("%s", "the certificate authority needs --secret-key-file");
    if (!secretbox_key_load(app.cfg.secret_key_file, true, app.secret_key, err, sizeof(err)))
        return fail("%s", err);
    app.have_secret_key = true;
    if (!prepare_schema(&app.cfg, false))
        return 1;
    app.db = db_pool_new(app.cfg.database_url, 1);
    app.ca = tls_ca_open(&app, err, sizeof(err));
    int rc = 0;
    if (app.ca != NULL)
        fputs(x509_ca_cert_pem(app.ca), stdout);
    else
        rc = fail("%s", err);
    close_tls(&app);
    db_pool_free(app.db);
    return rc;
}

/* Print a JSON document on stdout, and free it. */
static int print_json(json_t *out)
{
    json_dumpf(out, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(out);
    return 0;
}

/* Print the route table: each route's method, path, scope, whether it is
 * the console's, and the query parameters it accepts. */
static int cmd_routes(void)
{
    json_t *out = json_array();
    for (size_t i = 0; i < api_route_count; i++) {
        const struct route *r = &api_routes[i];
        json_t *query = json_array();
        for (const char *const *q = r->query; q != NULL && *q != NULL; q++)
            json_array_append_new(query, json_string(*q));
        json_array_append_new(out,
                              json_pack("{s:s, s:s, s:s, s:b, s:o}", "method", r->method, "path",
                                        r->pattern, "scope", route_scope_name(r->scope), "console",
                                        r->console, "query", query));
    }
    return print_json(out);
}

/* Print a NULL-terminated list of names as a JSON array. */
static int cmd_names(const char *const *names)
{
    json_t *out = json_array();
    for (const char *const *n = names; *n != NULL; n++)
        json_array_append_new(out, json_string(*n));
    return print_json(out);
}

/* Print the managed settings (engine_config.h) as a JSON array. */
static int cmd_managed_settings(void)
{
    static const char *const types[] = {
        [ENGINE_PARAM_INT] = "integer",
        [ENGINE_PARAM_BOOL] = "boolean",
        [ENGINE_PARAM_ENUM] = "enum",
        [ENGINE_PARAM_EVENTS] = "events",
    };
    json_t *out = json_array();
    const struct engine_config_managed *m;

    for (size_t i = 0; (m = engine_config_managed_at(i)) != NULL; i++) {
        json_t *item = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "parameter", m->param, "field",
                                 m->field, "type", types[m->type], "default", m->fallback,
                                 "cluster_only", m->cluster_only, "at_restart", m->at_restart);
        if (m->type == ENGINE_PARAM_INT)
            json_object_set_new(item, "range", json_pack("[I, I]", m->min, m->max));
        if (m->type == ENGINE_PARAM_ENUM) {
            json_t *values = json_array();
            for (const char *const *v = m->values; *v != NULL; v++)
                json_array_append_new(values, json_string(*v));
            json_object_set_new(item, "values", values);
        }
        json_array_append_new(out, item);
    }
    return print_json(out);
}

int main(int argc, char **argv)
{
    struct cli cli = {0};
    const char *cmd = "serve";

    if (argc > 1 && argv[1][0] != '-') {
        cmd = argv[1];
        argv[1] = argv[0];
        argc--;
        argv++;
    }
    if (!parse_cli(argc, argv, &cli))
        return 2;
    if (strcmp(cmd, "serve") == 0)
        return cmd_serve(&cli);
    if (strcmp(cmd, "migrate") == 0)
        return cmd_migrate(&cli);
    if (strcmp(cmd, "token") == 0)
        return cmd_token(&cli);
    if (strcmp(cmd, "ca-certificate") == 0)
        return cmd_ca_certificate(&cli);
    if (strcmp(cmd, "routes") == 0)
        return cmd_routes();
    if (strcmp(cmd, "engines") == 0)
        return cmd_names(engine_kind_names);
    if (strcmp(cmd, "operation-kinds") == 0)
        return cmd_names(op_kind_names());
    if (strcmp(cmd, "managed-settings") == 0)
        return cmd_managed_settings();
    if (strcmp(cmd, "changes") == 0)
        return print_json(change_table_json());
    if (strcmp(cmd, "version") == 0) {
        printf("cairnd %s\n", CAIRN_VERSION);
        return 0;
    }
    fprintf(stderr, "cairnd: unknown command '%s'\n", cmd);
    print_usage(stderr);
    return 2;
}
