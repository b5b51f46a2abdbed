/* config.c -- defaults, environment and flags for cairnd. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* Each setting once: its flag, its variable (NULL: a flag only), what
 * usage calls its value, and how to read it. The flags getopt_long()
 * takes, the usage text and the variables read all come from here. */
enum setting_kind { SET_LISTEN, SET_SENTINEL, SET_STRING, SET_SECRET, SET_INT, SET_SIZE, SET_FLAG };

struct setting {
    const char *flag;
    const char *env;
    const char *metavar; /* NULL for a SET_FLAG, which takes no value */
    enum setting_kind kind;
    long min, max;
    size_t offset;
};

#define AT(field) offsetof(struct config, field)

static const struct setting settings[] = {
    {"listen", "CAIRN_LISTEN", "HOST:PORT", SET_LISTEN, 0, 0, 0},
    {"database-url", "CAIRN_DATABASE_URL", "URL", SET_STRING, 0, 0, AT(database_url)},
    {"http-threads", "CAIRN_HTTP_THREADS", "N", SET_INT, 1, 256, AT(http_threads)},
    {"db-pool-size", "CAIRN_DB_POOL_SIZE", "N", SET_INT, 1, 1024, AT(db_pool_size)},
    {"max-body-bytes", "CAIRN_MAX_BODY_BYTES", "N", SET_SIZE, 64, 64L << 20, AT(max_body_bytes)},
    {"shutdown-timeout", "CAIRN_SHUTDOWN_TIMEOUT", "SECONDS", SET_INT, 0, 3600,
     AT(shutdown_timeout_s)},
    {"max-connections", "CAIRN_MAX_CONNECTIONS", "N", SET_INT, 16, 1000000, AT(max_connections)},
    {"max-connections-per-address", "CAIRN_MAX_CONNECTIONS_PER_ADDRESS", "N", SET_INT, 0, 1000000,
     AT(max_connections_per_address)},
    {"no-migrate", NULL, NULL, SET_FLAG, 0, 0, AT(no_migrate)},
    {"agent-bootstrap-token", "CAIRN_AGENT_BOOTSTRAP_TOKEN", "TOKEN", SET_SECRET, 16, 256,
     AT(agent_bootstrap_token)},
    {"approve-bootstrap-hosts", NULL, NULL, SET_FLAG, 0, 0, AT(approve_bootstrap_hosts)},
    {"heartbeat-timeout", "CAIRN_HEARTBEAT_TIMEOUT", "SECONDS", SET_INT, 2, 3600,
     AT(heartbeat_timeout_s)},
    {"sync-wait-ms", "CAIRN_SYNC_WAIT_MS", "MS", SET_INT, 0, 10000, AT(sync_wait_ms)},
    {"secret-key-file", "CAIRN_SECRET_KEY_FILE", "PATH", SET_STRING, 0, 0, AT(secret_key_file)},
    {"web-root", "CAIRN_WEB_ROOT", "DIR", SET_STRING, 0, 0, AT(web_root)},
    {"tls", NULL, NULL, SET_FLAG, 0, 0, AT(tls)},
    {"tls-names", "CAIRN_TLS_NAMES", "HOST[,HOST...]", SET_STRING, 0, 0, AT(tls_names)},
    {"tls-cert-file", "CAIRN_TLS_CERT_FILE", "PATH", SET_STRING, 0, 0, AT(tls_cert_file)},
    {"tls-key-file", "CAIRN_TLS_KEY_FILE", "PATH", SET_STRING, 0, 0, AT(tls_key_file)},
    {"sentinel-listen", "CAIRN_SENTINEL_LISTEN", "HOST:PORT|off", SET_SENTINEL, 0, 0, 0},
    {"sentinel-max-clients", "CAIRN_SENTINEL_MAX_CLIENTS", "N", SET_INT, 4, 65536,
     AT(sentinel_max_clients)},
    {"replace-after", "CAIRN_REPLACE_AFTER", "SECONDS", SET_INT, 1, 86400, AT(replace_after_s)},
    {"metrics-retention-days", "CAIRN_METRICS_RETENTION_DAYS", "DAYS", SET_INT, 1, 3650,
     AT(metrics_retention_days)},
    {"upgrade-node-timeout", "CAIRN_UPGRADE_NODE_TIMEOUT", "SECONDS", SET_INT, 5, 86400,
     AT(upgrade_node_timeout_s)},
    {"upgrade-parallel-shards", "CAIRN_UPGRADE_PARALLEL_SHARDS", "N", SET_INT, 1, 500,
     AT(upgrade_parallel_shards)},
    {"max-wait", "CAIRN_MAX_WAIT", "SECONDS", SET_INT, 0, 3600, AT(max_wait_s)},
    {"rate-limit", "CAIRN_RATE_LIMIT", "N", SET_INT, 0, 1000000, AT(rate_limit)},
    {"rate-limit-burst", "CAIRN_RATE_LIMIT_BURST", "N", SET_INT, 1, 1000000, AT(rate_limit_burst)},
    {"calibration-benchmark", "CAIRN_CALIBRATION_BENCHMARK", "PATH", SET_STRING, 0, 0,
     AT(calibration_benchmark)},
    {"snapshot-store", "CAIRN_SNAPSHOT_STORE", "STORE", SET_STRING, 0, 0, AT(snapshot_store)},
    {"snapshot-s3-endpoint", "CAIRN_SNAPSHOT_S3_ENDPOINT", "URL", SET_STRING, 0, 0,
     AT(snapshot_s3_endpoint)},
    {"snapshot-s3-region", "CAIRN_SNAPSHOT_S3_REGION", "REGION", SET_STRING, 0, 0,
     AT(snapshot_s3_region)},
    {"test-clock-offset", "CAIRN_TEST_CLOCK_OFFSET", "SECONDS", SET_INT, -31622400, 31622400,
     AT(test_clock_offset_s)},
};

#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

bool config_parse_listen(struct config *cfg, const char *text)
{
    const char *colon = strrchr(text, ':');
    const char *host = text;
    size_t hlen;
    char *end;

    if (colon == NULL)
        return false;
    hlen = (size_t)(colon - text);
    if (text[0] == '[') {
        if (hlen < 2 || text[hlen - 1] != ']')
            return false;
        host++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof(cfg->listen_host))
        return false;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (!isdigit((unsigned char)colon[1]) || *end != '\0' || errno != 0 || port > 65535)
        return false;
    memcpy(cfg->listen_host, host, hlen);
    cfg->listen_host[hlen] = '\0';
    cfg->listen_port = (int)port;
    return true;
}

static bool apply(struct config *cfg, const struct setting *s, const char *value, const char *name,
                  char *err, size_t errsize)
{
    char *field = (char *)cfg + s->offset;
    char *end;
    long v;

    switch (s->kind) {
    case SET_LISTEN:
        if (!config_parse_listen(cfg, value)) {
            snprintf(err, errsize, "%s: expected HOST:PORT, got '%s'", name, value);
            return false;
        }
        return true;
    case SET_SENTINEL: {
        /* HOST:PORT, or "off". It shares the listen parser. */
        struct config where = *cfg;
        if (strcmp(value, "off") == 0) {
            cfg->sentinel_host[0] = '\0';
            return true;
        }
        if (!config_parse_listen(&where, value)) {
            snprintf(err, errsize, "%s: expected HOST:PORT or off, got '%s'", name, value);
            return false;
        }
        memcpy(cfg->sentinel_host, where.listen_host, sizeof(cfg->sentinel_host));
        cfg->sentinel_port = where.listen_port;
        return true;
    }
    case SET_STRING:
        *(const char **)field = value;
        return true;
    case SET_FLAG:
        *(bool *)field = true;
        return true;
    case SET_SECRET:
        if (strlen(value) < (size_t)s->min || strlen(value) > (size_t)s->max) {
            /* The value itself stays out of the message: it is a secret. */
            snprintf(err, errsize, "%s: expected %ld to %ld characters", name, s->min, s->max);
            return false;
        }
        *(const char **)field = value;
        return true;
    case SET_INT:
    case SET_SIZE:
        errno = 0;
        v = strtol(value, &end, 10);
        if (!isdigit((unsigned char)value[0]) || *end != '\0' || errno != 0 || v < s->min ||
            v > s->max) {
            snprintf(err, errsize, "%s: expected an integer from %ld to %ld, got '%s'", name,
                     s->min, s->max, value);
            return false;
        }
        if (s->kind == SET_INT)
            *(int *)field = (int)v;
        else
            *(size_t *)field = (size_t)v;
        return true;
    }
    return false;
}

bool config_from_env(struct config *cfg, char *err, size_t errsize)
{
    memset(cfg, 0, sizeof(*cfg));
    strcpy(cfg->listen_host, "127.0.0.1");
    cfg->listen_port = 8080;
    cfg->http_threads = 4;
    cfg->max_body_bytes = 1 << 20;
    cfg->max_connections = 4096;
    cfg->max_connections_per_address = 512;
    cfg->shutdown_timeout_s = 10;
    cfg->heartbeat_timeout_s = 6;
    cfg->replace_after_s = 60;
    cfg->metrics_retention_days = 15;
    cfg->upgrade_node_timeout_s = 300;
    cfg->upgrade_parallel_shards = 1;
    cfg->max_wait_s = 300;
    cfg->rate_limit = 100;
    cfg->rate_limit_burst = 200;
    strcpy(cfg->sentinel_host, "127.0.0.1");
    cfg->sentinel_port = 26379;
    cfg->sentinel_max_clients = 1024;
    cfg->sync_wait_ms = -1; /* unset: derived from the heartbeat timeout */
    for (size_t i = 0; i < NSETTINGS; i++) {
        const char *v = settings[i].env != NULL ? getenv(settings[i].env) : NULL;
        if (v != NULL && v[0] != '\0' &&
            !apply(cfg, &settings[i], v, settings[i].env, err, errsize))
            return false;
    }
    return true;
}

bool config_set(struct config *cfg, const char *flag, const char *value, char *err, size_t errsize)
{
    char name[64];

    for (size_t i = 0; i < NSETTINGS; i++) {
        if (strcmp(settings[i].flag, flag) == 0) {
            snprintf(name, sizeof(name), "--%s", flag);
            return apply(cfg, &settings[i], value, name, err, errsize);
        }
    }
    snprintf(err, errsize, "unknown option --%s", flag);
    return false;
}

struct option *config_options(const struct option *extra, size_t n)
{
    struct option *o = xcalloc(NSETTINGS + n + 1, sizeof(*o));

    for (size_t i = 0; i < NSETTINGS; i++) {
        o[i].name = settings[i].flag;
        o[i].has_arg = settings[i].kind == SET_FLAG ? no_argument : required_argument;
    }
    memcpy(o + NSETTINGS, extra, n * sizeof(*extra));
    return o;
}

void config_usage_flags(struct usage *u)
{
    for (size_t i = 0; i < NSETTINGS; i++) {
        if (settings[i].metavar != NULL)
            usage_word(u, "[--%s %s]", settings[i].flag, settings[i].metavar);
        else
            usage_word(u, "[--%s]", settings[i].flag);
    }
}

void config_usage_env(FILE *out)
{
    struct usage u;
    const char *last = NULL;

    usage_start(&u, out, "Every flag with a value may also come from the environment:", 0);
    for (size_t i = 0; i < NSETTINGS; i++) {
        if (settings[i].env == NULL)
            continue;
        if (last != NULL)
            usage_word(&u, "%s,", last);
        last = settings[i].env;
    }
    usage_word(&u, "%s.", last);
    usage_end(&u);
}
