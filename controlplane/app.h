/* app.h -- what every request handler can reach: configuration and the
 * database pool. One instance per cairnd process. */
#ifndef CAIRN_APP_H
#define CAIRN_APP_H

#include <stdbool.h>
#include <stddef.h>

struct config {
    char listen_host[64];
    int listen_port;
    const char *database_url;
    int http_threads;
    int db_pool_size;
    size_t max_body_bytes;
    int max_connections;             /* HTTP connections served beyond agents and probes */
    int max_connections_per_address; /* from one client address; 0: no cap */
    bool no_migrate;
    int shutdown_timeout_s;
    const char *agent_bootstrap_token; /* NULL: agents register with join tokens only */
    bool approve_bootstrap_hosts;      /* hosts registered with it need no approval */
    const char *secret_key_file;       /* seals engine passwords; NULL: clusters refused */
    const char *web_root;              /* the console's files (web.h); NULL or "": none */
    bool tls;                          /* serve HTTPS (tls.h) */
    const char *tls_names;             /* names cairnd's own certificate is for, comma-separated */
    const char *tls_cert_file;         /* an operator's certificate instead of one cairnd issues */
    const char *tls_key_file;
    const char *calibration_benchmark; /* the load generator calibrations run; NULL: found */
    char sentinel_host[64];            /* Sentinel-compatible discovery; "" when off */
    int sentinel_port;
    int sentinel_max_clients;         /* Sentinel connections at once */
    int heartbeat_timeout_s;          /* a host silent this long is lost */
    int sync_wait_ms;                 /* longest an agent's sync is held; -1 until set */
    int replace_after_s;              /* a node lost (or crashed) this long is replaced */
    int metrics_retention_days;       /* 60-second samples are kept this long */
    int upgrade_node_timeout_s;       /* an upgraded node not healthy by then: rollback */
    int upgrade_parallel_shards;      /* shards an engine upgrade takes at once */
    int max_wait_s;                   /* longest a write waits for its operation (Prefer: wait) */
    int rate_limit;                   /* requests a second per API token; 0: no limit */
    int rate_limit_burst;             /* ... in bursts of up to this many */
    const char *snapshot_store;       /* a directory or s3:// URL (snapshot_store.h); NULL:
                                         snapshots refused */
    const char *snapshot_s3_endpoint; /* an s3:// store's endpoint URL */
    const char *snapshot_s3_region;   /* ... and region; NULL: us-east-1 */
    int test_clock_offset_s;          /* tests only: seconds added to the clock maintenance
                                         windows are read by */
};

struct runner;
struct monitor;
struct http_server;
struct ratelimit;
struct x509_ca;
struct resp_tls;
struct token_cache;
struct snapshot_store;

struct app {
    struct config cfg;
    struct db_pool *db;
    struct runner *runner;      /* poked when this process queues an operation */
    struct monitor *monitor;    /* poked when an agent reports an engine in trouble */
    struct http_server *http;   /* the API's server, once it listens */
    struct ratelimit *limits;   /* requests per API token (http/ratelimit.h) */
    struct token_cache *tokens; /* credentials verified lately (http/token_cache.h) */
    bool have_secret_key;       /* engine passwords can be sealed and opened */
    unsigned char secret_key[32];
    struct x509_ca *ca;          /* the installation's certificate authority (tls.h); NULL without a
                                    secret key */
    struct resp_tls *engine_tls; /* how cairnd checks TLS engines' certificates (ca's) */
    char *tls_cert_pem;          /* HTTPS: cairnd's certificate and key; NULL: plain HTTP */
    char *tls_key_pem;
    struct snapshot_store *snapshots; /* where snapshots are kept; NULL: none configured */
};

#endif
