/* engine_config.c -- rendering an engine's configuration file from a node's
 * spec: Cairn's fixed choices, the memory sizing, and the allowlist of
 * parameters users may set. */
#include "engine_config.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "strbuf.h"
#include "xalloc.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

/* Below this, a node could hold next to nothing and the buffer floors
 * below would dwarf the data. */
#define MAXMEMORY_MIN (16 * MIB)
/* Node types top out well below this (16 TiB); it keeps the byte
 * arithmetic far from overflow. */
#define MEMORY_MIB_MAX (UINT64_C(1) << 24)

/*
 * Replication sizing.
 *
 * Backlog (repl-backlog-size): a replica that loses its link for a moment
 * (a network blip, a restart during an in-place upgrade) resumes with a
 * partial resync only if everything written meanwhile is still in the
 * primary's backlog; otherwise it needs a full sync, which forks the
 * primary and copies the whole dataset. The engines' default of 1 MiB
 * covers well under a second of a busy primary. Write volume grows with the
 * dataset a node holds, so the backlog is 1% of maxmemory: 100 MiB on a
 * 10 GiB node, enough for tens of seconds at several MB/s of writes. The
 * floor (16 MiB) gives small nodes useful cover for little memory; the
 * ceiling (1 GiB) stops paying for minutes of history a replica that far
 * behind would not benefit from. The backlog lives outside maxmemory, in the
 * reserved memory.
 *
 * Replica output buffer (client-output-buffer-limit replica): during a full
 * sync the primary holds every write made since the snapshot began, for as
 * long as the transfer takes. If that exceeds the hard limit the replica is
 * dropped and the sync starts over -- and under steady write load it fails
 * the same way again, forever. Buffered bytes = write rate x sync time
 * (the transfer plus the replica's loading), and that time grows with the
 * dataset, so the limit must grow
 * with the node; the 256 MiB default is too small for large nodes and too
 * large for a 0.5 GiB one. The memory for it can only come from what
 * maxmemory leaves over, the reserve, which also has to absorb the
 * copy-on-write pages of the fork. So the hard limit is half the reserve:
 * with the default 25% that is 12.5% of the node (1/6 of maxmemory), which
 * lets a sync finish while writes arrive at up to a sixth of the transfer
 * rate. Floor 64 MiB (the engines' own soft limit), ceiling 16 GiB (at
 * 10 MB/s of writes, a sync of about half an hour; a replica slower than
 * that is better reported than left to grow the primary). Since Redis 7.0 the
 * replicas share one replication buffer, so several syncing replicas do not
 * multiply this.
 *
 * The soft limit is off (0 0): it drops a replica whose buffer stays above
 * a threshold for N seconds, and a full sync of a large dataset under load
 * legitimately stays above any useful threshold for its whole transfer --
 * a soft limit is exactly what turns slow syncs into sync loops.
 */
#define BACKLOG_MIN        (16 * MIB)
#define BACKLOG_MAX        GIB
#define REPLICA_BUFFER_MIN (64 * MIB)
#define REPLICA_BUFFER_MAX (16 * GIB)

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

bool engine_config_sizes(uint64_t memory_mib, int reserved_percent, struct engine_config_sizes *out)
{
    if (memory_mib == 0 || memory_mib > MEMORY_MIB_MAX || reserved_percent < 0 ||
        reserved_percent > ENGINE_CONFIG_RESERVED_MAX)
        return false;
    uint64_t memory = memory_mib * MIB;
    uint64_t maxmemory = memory * (uint64_t)(100 - reserved_percent) / 100;
    if (maxmemory < MAXMEMORY_MIN)
        return false;
    out->maxmemory = maxmemory;
    out->repl_backlog = clamp(maxmemory / 100, BACKLOG_MIN, BACKLOG_MAX);
    out->replica_buffer = clamp((memory - maxmemory) / 2, REPLICA_BUFFER_MIN, REPLICA_BUFFER_MAX);
    return true;
}

/* ---- Engine differences ------------------------------------------------ */

/* Directives that only some engines or lines accept, with the first line of
 * each engine that does (NULL: none). Anything not listed is accepted by
 * every line Cairn configures (Redis 7.0+, Valkey 7.2+). Both the fixed
 * directives and the user parameters are checked against this one table. */
static const struct availability {
    const char *directive;
    const char *since[ENGINE_KIND_COUNT];
} availability[] = {
    {"cluster-announce-human-nodename", {[ENGINE_REDIS] = "7.2", [ENGINE_VALKEY] = "7.2"}},
    {"set-max-listpack-entries", {[ENGINE_REDIS] = "7.2", [ENGINE_VALKEY] = "7.2"}},
    {"set-max-listpack-value", {[ENGINE_REDIS] = "7.2", [ENGINE_VALKEY] = "7.2"}},
    {"availability-zone", {[ENGINE_VALKEY] = "8.0"}},
    {"cluster-slot-stats-enabled", {[ENGINE_VALKEY] = "8.0"}},
    {"dual-channel-replication-enabled", {[ENGINE_VALKEY] = "8.0"}},
};

static const struct availability *find_availability(const char *directive)
{
    for (size_t i = 0; i < sizeof(availability) / sizeof(availability[0]); i++) {
        if (strcmp(availability[i].directive, directive) == 0)
            return &availability[i];
    }
    return NULL;
}

static bool available(enum engine_kind kind, const char *line, const char *directive)
{
    const struct availability *a = find_availability(directive);
    if (a == NULL)
        return true;
    return a->since[kind] != NULL && engine_line_compare(line, a->since[kind]) >= 0;
}

/* "is not available on redis 7.0 (valkey 8.0 and later)" */
static void unavailable_message(enum engine_kind kind, const char *line, const char *directive,
                                char *msg, size_t msgsize)
{
    const struct availability *a = find_availability(directive);
    size_t o =
        (size_t)snprintf(msg, msgsize, "is not available on %s %s (", engine_kind_name(kind), line);
    const char *sep = "";

    for (int k = 0; k < ENGINE_KIND_COUNT && o < msgsize; k++) {
        if (a->since[k] == NULL)
            continue;
        o += (size_t)snprintf(msg + o, msgsize - o, "%s%s %s and later", sep,
                              engine_kind_name((enum engine_kind)k), a->since[k]);
        sep = ", ";
    }
    if (o < msgsize)
        snprintf(msg + o, msgsize - o, ")");
}

/* ---- Values ------------------------------------------------------------ */

/* maxmemory-policy values, the same on every line Cairn configures. */
static const char *const policies[] = {
    "volatile-lru",   "allkeys-lru",  "volatile-lfu", "allkeys-lfu", "volatile-random",
    "allkeys-random", "volatile-ttl", "noeviction",   NULL,
};

static bool one_of(const char *s, const char *const *values)
{
    for (; *values != NULL; values++) {
        if (strcmp(s, *values) == 0)
            return true;
    }
    return false;
}

/* Write "must be one of: a, b, c" for the NULL-terminated values. */
static void one_of_message(const char *const *values, char *msg, size_t msgsize)
{
    size_t o = (size_t)snprintf(msg, msgsize, "must be one of:");

    for (const char *const *v = values; *v != NULL && o < msgsize; v++)
        o += (size_t)snprintf(msg + o, msgsize - o, "%s %s", v == values ? "" : ",", *v);
}

bool engine_config_policy_valid(const char *policy)
{
    return policy != NULL && one_of(policy, policies);
}

/* Copy s for an error message: printable ASCII, others as \xHH, cut at
 * about 40 characters. */
static const char *shown(const char *s, char *buf, size_t size)
{
    size_t o = 0;

    for (; *s != '\0' && o + 5 < size && o < 40; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
    }
    if (*s != '\0' && o + 4 < size)
        o += (size_t)snprintf(buf + o, size - o, "...");
    buf[o] = '\0';
    return buf;
}

/* Parse a decimal integer, optional '-', digits only, nothing else. */
static bool parse_int(const char *s, long long *out)
{
    const char *p = s + (*s == '-');
    long long v = 0;

    if (*p == '\0' || strspn(p, "0123456789") != strlen(p) || strlen(p) > 18)
        return false;
    for (; *p != '\0'; p++)
        v = v * 10 + (*p - '0');
    *out = *s == '-' ? -v : v;
    return true;
}

/* ---- The allowlist ----------------------------------------------------- */

/* Redis 7.0 lacks the "nothing" level of later lines. */
static const char *const loglevels[] = {"debug", "verbose", "notice", "warning", NULL};

/* What users may set, with the engines' own ranges (tightened where the
 * engine's range allows nonsense). Everything else is refused: a directive
 * can move files, open ports, or undo the sizing above.
 *
 * Not here, on purpose: activedefrag (and its active-defrag-* tuning).
 * Debian's redis-server and valkey-server link the system jemalloc, which
 * lacks the hint API defragmentation needs, and both treat `activedefrag
 * yes` as a fatal config error: the node would not start. It can come back
 * once agents report whether their binaries support it. */
static const struct engine_config_param_spec params[] = {
    /* Connections */
    {"timeout", ENGINE_PARAM_INT, 0, INT_MAX},
    {"tcp-keepalive", ENGINE_PARAM_INT, 0, INT_MAX},
    {"maxclients", ENGINE_PARAM_INT, 1, 65000},
    /* Eviction and expiry */
    {"maxmemory-samples", ENGINE_PARAM_INT, 1, 64},
    {"maxmemory-eviction-tenacity", ENGINE_PARAM_INT, 0, 100},
    {"active-expire-effort", ENGINE_PARAM_INT, 1, 10},
    {"lfu-log-factor", ENGINE_PARAM_INT, 0, INT_MAX},
    {"lfu-decay-time", ENGINE_PARAM_INT, 0, INT_MAX},
    {"lazyfree-lazy-eviction", ENGINE_PARAM_BOOL},
    {"lazyfree-lazy-expire", ENGINE_PARAM_BOOL},
    {"lazyfree-lazy-server-del", ENGINE_PARAM_BOOL},
    {"lazyfree-lazy-user-del", ENGINE_PARAM_BOOL},
    {"lazyfree-lazy-user-flush", ENGINE_PARAM_BOOL},
    {"replica-lazy-flush", ENGINE_PARAM_BOOL},
    /* Encodings */
    {"hash-max-listpack-entries", ENGINE_PARAM_INT, 0, INT_MAX},
    {"hash-max-listpack-value", ENGINE_PARAM_INT, 0, INT_MAX},
    {"zset-max-listpack-entries", ENGINE_PARAM_INT, 0, INT_MAX},
    {"zset-max-listpack-value", ENGINE_PARAM_INT, 0, INT_MAX},
    {"set-max-intset-entries", ENGINE_PARAM_INT, 0, INT_MAX},
    {"set-max-listpack-entries", ENGINE_PARAM_INT, 0, INT_MAX},
    {"set-max-listpack-value", ENGINE_PARAM_INT, 0, INT_MAX},
    {"list-max-listpack-size", ENGINE_PARAM_INT, -5, 32767},
    {"list-compress-depth", ENGINE_PARAM_INT, 0, INT_MAX},
    {"stream-node-max-bytes", ENGINE_PARAM_INT, 0, INT_MAX},
    {"stream-node-max-entries", ENGINE_PARAM_INT, 0, INT_MAX},
    {"activerehashing", ENGINE_PARAM_BOOL},
    /* Observability */
    {"notify-keyspace-events", ENGINE_PARAM_EVENTS},
    {"latency-tracking", ENGINE_PARAM_BOOL},
    {"latency-monitor-threshold", ENGINE_PARAM_INT, 0, INT_MAX},
    {"slowlog-log-slower-than", ENGINE_PARAM_INT, -1, INT_MAX},
    {"slowlog-max-len", ENGINE_PARAM_INT, 0, INT_MAX},
    {"loglevel", ENGINE_PARAM_ENUM, .values = loglevels},
    /* Scripts and server cron */
    {"busy-reply-threshold", ENGINE_PARAM_INT, 0, INT_MAX},
    {"hz", ENGINE_PARAM_INT, 1, 500},
    {"dynamic-hz", ENGINE_PARAM_BOOL},
    /* Cluster behaviour */
    {"cluster-allow-reads-when-down", ENGINE_PARAM_BOOL},
    {"cluster-require-full-coverage", ENGINE_PARAM_BOOL},
    {"cluster-allow-replica-migration", ENGINE_PARAM_BOOL},
    {"cluster-allow-pubsubshard-when-down", ENGINE_PARAM_BOOL},
    {"cluster-migration-barrier", ENGINE_PARAM_INT, 0, INT_MAX},
    /* Replication */
    {"dual-channel-replication-enabled", ENGINE_PARAM_BOOL},
};

/* Old names the engines still accept, mapped to the allowlist entry they
 * set (parameter groups carried over from older versions use them). */
static const struct alias {
    const char *alias, *name;
} aliases[] = {
    {"lua-time-limit", "busy-reply-threshold"},
    {"hash-max-ziplist-entries", "hash-max-listpack-entries"},
    {"hash-max-ziplist-value", "hash-max-listpack-value"},
    {"zset-max-ziplist-entries", "zset-max-listpack-entries"},
    {"zset-max-ziplist-value", "zset-max-listpack-value"},
    {"list-max-ziplist-size", "list-max-listpack-size"},
};

/* Directives Cairn sets itself: refused as parameters with a reason rather
 * than as unknown. */
static const char *const managed[] = {
    "port",
    "bind",
    "protected-mode",
    "daemonize",
    "dir",
    "pidfile",
    "logfile",
    "maxmemory",
    "maxmemory-policy",
    "appendonly",
    "appendfsync",
    "save",
    "repl-diskless-sync",
    "repl-diskless-sync-delay",
    "repl-backlog-size",
    "client-output-buffer-limit",
    "requirepass",
    "masterauth",
    "primaryauth",
    "masteruser",
    "primaryuser",
    "aclfile",
    "cluster-enabled",
    "cluster-config-file",
    "cluster-node-timeout",
    "cluster-announce-human-nodename",
    "cluster-slot-stats-enabled",
    "availability-zone",
    NULL,
};

static const struct engine_config_param_spec *find_param(const char *name)
{
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
        if (strcmp(aliases[i].alias, name) == 0) {
            name = aliases[i].name;
            break;
        }
    }
    for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
        if (strcmp(params[i].name, name) == 0)
            return &params[i];
    }
    return NULL;
}

const struct engine_config_param_spec *engine_config_param_at(size_t i)
{
    return i < sizeof(params) / sizeof(params[0]) ? &params[i] : NULL;
}

bool engine_config_param_available(enum engine_kind kind, const char *line, const char *name)
{
    const struct engine_config_param_spec *p = find_param(name);
    return p != NULL && available(kind, line, p->name);
}

/* Check value against p; on failure write what it must be into msg. */
static bool check_value(const struct engine_config_param_spec *p, const char *value, char *msg,
                        size_t msgsize)
{
    long long v;

    switch (p->type) {
    case ENGINE_PARAM_INT:
        if (parse_int(value, &v) && v >= p->min && v <= p->max)
            return true;
        snprintf(msg, msgsize, "must be an integer from %lld to %lld", p->min, p->max);
        return false;
    case ENGINE_PARAM_BOOL:
        if (strcmp(value, "yes") == 0 || strcmp(value, "no") == 0)
            return true;
        snprintf(msg, msgsize, "must be yes or no");
        return false;
    case ENGINE_PARAM_ENUM:
        if (one_of(value, p->values))
            return true;
        one_of_message(p->values, msg, msgsize);
        return false;
    case ENGINE_PARAM_EVENTS:
        if (strspn(value, ENGINE_CONFIG_EVENT_CLASSES) == strlen(value))
            return true;
        snprintf(msg, msgsize, "may contain only the event classes %s",
                 ENGINE_CONFIG_EVENT_CLASSES);
        return false;
    }
    return false;
}

bool engine_config_param_check(enum engine_kind kind, const char *line, const char *name,
                               const char *value, const char **canonical, char *err, size_t errsize)
{
    char msg[256], nbuf[64], vbuf[64];
    const struct engine_config_param_spec *p = find_param(name);

    if (p == NULL) {
        snprintf(err, errsize,
                 one_of(name, managed) ? "parameter \"%s\" is managed by Cairn and cannot be set"
                                       : "parameter \"%s\" is not one users may set",
                 shown(name, nbuf, sizeof(nbuf)));
        return false;
    }
    if (!available(kind, line, p->name)) {
        unavailable_message(kind, line, p->name, msg, sizeof(msg));
        snprintf(err, errsize, "parameter \"%s\" %s", name, msg);
        return false;
    }
    if (!check_value(p, value, msg, sizeof(msg))) {
        snprintf(err, errsize, "parameter \"%s\": value \"%s\" %s", name,
                 shown(value, vbuf, sizeof(vbuf)), msg);
        return false;
    }
    if (canonical != NULL)
        *canonical = p->name;
    return true;
}

/* ---- Managed settings -------------------------------------------------- */

/* The managed settings (see engine_config.h), each with the member of
 * struct engine_config_spec that holds it: an int for ENGINE_PARAM_INT, a
 * bool for ENGINE_PARAM_BOOL, a const char * for ENGINE_PARAM_ENUM. */
static const struct managed_row {
    struct engine_config_managed m;
    size_t offset;
} managed_settings[] = {
    {{"maxmemory-policy", "maxmemory_policy", ENGINE_PARAM_ENUM, .values = policies,
      .fallback = "volatile-lru"},
     offsetof(struct engine_config_spec, maxmemory_policy)},
    {{"reserved-memory-percent", "reserved_memory_percent", ENGINE_PARAM_INT, 0,
      ENGINE_CONFIG_RESERVED_MAX, .fallback = "25", .at_restart = true},
     offsetof(struct engine_config_spec, reserved_memory_percent)},
    {{"appendonly", "appendonly", ENGINE_PARAM_BOOL, .fallback = "yes", .at_restart = true},
     offsetof(struct engine_config_spec, appendonly)},
    /* The engines' own default is 15 s: see render_cluster() for why 5. */
    {{"cluster-node-timeout", "cluster_node_timeout_ms", ENGINE_PARAM_INT,
      ENGINE_CONFIG_NODE_TIMEOUT_MIN_MS, ENGINE_CONFIG_NODE_TIMEOUT_MAX_MS, .unit = "milliseconds",
      .fallback = "5000", .cluster_only = true, .at_restart = true},
     offsetof(struct engine_config_spec, cluster_node_timeout_ms)},
};

#define N_MANAGED (sizeof(managed_settings) / sizeof(managed_settings[0]))

const struct engine_config_managed *engine_config_managed_at(size_t i)
{
    return i < N_MANAGED ? &managed_settings[i].m : NULL;
}

const struct engine_config_managed *engine_config_managed_find(const char *name)
{
    for (size_t i = 0; i < N_MANAGED; i++) {
        if (strcmp(managed_settings[i].m.param, name) == 0)
            return &managed_settings[i].m;
    }
    return NULL;
}

/* A managed integer as users write it: 1 to 9 digits, no sign, no leading
 * zero (stricter than the allowlist's parse_int()). */
static bool parse_decimal(const char *s, long long *out)
{
    size_t n = strlen(s);
    long long v = 0;

    if (n == 0 || n > 9 || strspn(s, "0123456789") != n || (n > 1 && s[0] == '0'))
        return false;
    for (; *s != '\0'; s++)
        v = v * 10 + (*s - '0');
    *out = v;
    return true;
}

bool engine_config_managed_check(const struct engine_config_managed *m, const char *value,
                                 char *msg, size_t msgsize)
{
    const struct engine_config_param_spec p = {m->param, m->type, m->min, m->max, m->values};
    long long v;

    if (m->type != ENGINE_PARAM_INT)
        return check_value(&p, value, msg, msgsize);
    if (parse_decimal(value, &v) && v >= m->min && v <= m->max)
        return true;
    snprintf(msg, msgsize, "must be an integer from %lld to %lld%s%s%s", m->min, m->max,
             m->unit != NULL ? " (" : "", m->unit != NULL ? m->unit : "",
             m->unit != NULL ? ")" : "");
    return false;
}

void engine_config_defaults(struct engine_config_spec *spec)
{
    memset(spec, 0, sizeof(*spec));
    spec->kind = ENGINE_VALKEY;
    spec->line = "8.0";
    for (size_t i = 0; i < N_MANAGED; i++) {
        const struct engine_config_managed *m = &managed_settings[i].m;
        char *member = (char *)spec + managed_settings[i].offset;
        if (m->type == ENGINE_PARAM_INT)
            *(int *)member = atoi(m->fallback);
        else if (m->type == ENGINE_PARAM_BOOL)
            *(bool *)member = strcmp(m->fallback, "yes") == 0;
        else
            *(const char **)member = m->fallback;
    }
}

/* ---- Checking the spec ------------------------------------------------- */

static bool is_token(const char *s, size_t max)
{
    size_t n = strlen(s);
    bool alnum0 = (s[0] >= '0' && s[0] <= '9') || (s[0] >= 'A' && s[0] <= 'Z') ||
                  (s[0] >= 'a' && s[0] <= 'z');
    return n > 0 && n <= max && alnum0 &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* An absolute path within the length limit; NULL passes when optional. */
static bool check_path(const char *field, const char *path, bool optional, char *err,
                       size_t errsize)
{
    if (path == NULL && optional)
        return true;
    if (path == NULL || path[0] != '/') {
        snprintf(err, errsize, "%s must be an absolute path", field);
        return false;
    }
    if (strlen(path) > ENGINE_CONFIG_PATH_MAX) {
        snprintf(err, errsize, "%s must be at most %d bytes", field, ENGINE_CONFIG_PATH_MAX);
        return false;
    }
    return true;
}

/* Whether bind is an IP address, and whether a loopback one. */
static bool parse_bind(const char *bind, bool *loopback)
{
    unsigned char addr[16];

    if (inet_pton(AF_INET, bind, addr) == 1) {
        *loopback = addr[0] == 127;
        return true;
    }
    if (inet_pton(AF_INET6, bind, addr) == 1) {
        static const unsigned char one[16] = {[15] = 1};
        *loopback = memcmp(addr, one, sizeof(one)) == 0;
        return true;
    }
    return false;
}

static bool has_password(const struct engine_config_spec *spec)
{
    return spec->password != NULL && spec->password[0] != '\0';
}

static bool own_password(const char *p)
{
    return p != NULL && p[0] != '\0' && strlen(p) <= ENGINE_CONFIG_PASSWORD_MAX;
}

static bool check_engine(const struct engine_config_spec *spec, char *err, size_t errsize)
{
    if ((unsigned)spec->kind >= ENGINE_KIND_COUNT) {
        snprintf(err, errsize, "engine is not a known engine");
        return false;
    }
    if (spec->line == NULL || !engine_line_parse(spec->line, NULL, NULL)) {
        snprintf(err, errsize, "line must be MAJOR.MINOR, like 8.0");
        return false;
    }
    if (engine_line_compare(spec->line, engine_kind_first_line(spec->kind)) < 0) {
        snprintf(err, errsize, "%s %s is older than %s, the first line Cairn configures",
                 engine_kind_name(spec->kind), spec->line, engine_kind_first_line(spec->kind));
        return false;
    }
    return true;
}

static bool check_network(const struct engine_config_spec *spec, bool *loopback, char *err,
                          size_t errsize)
{
    char buf[64];
    int max_port = spec->cluster_enabled ? 65535 - 10000 : 65535;

    if (spec->port < 1 || spec->port > max_port) {
        snprintf(err, errsize,
                 spec->cluster_enabled
                     ? "port must be from 1 to %d in cluster mode (the cluster bus uses port + "
                       "10000)"
                     : "port must be from 1 to %d",
                 max_port);
        return false;
    }
    if (spec->bind == NULL || !parse_bind(spec->bind, loopback)) {
        snprintf(err, errsize, "bind must be an IPv4 or IPv6 address, not \"%s\"",
                 spec->bind != NULL ? shown(spec->bind, buf, sizeof(buf)) : "");
        return false;
    }
    if (!*loopback && !has_password(spec)) {
        snprintf(err, errsize,
                 "bind: %s is reachable from the network, so the node needs a password",
                 spec->bind);
        return false;
    }
    if (has_password(spec) && strlen(spec->password) > ENGINE_CONFIG_PASSWORD_MAX) {
        snprintf(err, errsize, "password must be at most %d bytes", ENGINE_CONFIG_PASSWORD_MAX);
        return false;
    }
    if (spec->admin_password != NULL &&
        (!own_password(spec->admin_password) || !own_password(spec->replication_password))) {
        snprintf(err, errsize, "admin_password and replication_password must both be 1 to %d bytes",
                 ENGINE_CONFIG_PASSWORD_MAX);
        return false;
    }
    bool ignored;
    if (spec->replicaof_host != NULL && !spec->cluster_enabled &&
        (!parse_bind(spec->replicaof_host, &ignored) || spec->replicaof_port < 1 ||
         spec->replicaof_port > 65535)) {
        snprintf(err, errsize, "replicaof must be an IP address and a port from 1 to 65535");
        return false;
    }
    return true;
}

static bool check_spec(const struct engine_config_spec *spec, bool *loopback, char *err,
                       size_t errsize)
{
    if (!check_engine(spec, err, errsize))
        return false;
    if (spec->node_id == NULL || !is_token(spec->node_id, ENGINE_CONFIG_ID_MAX)) {
        snprintf(err, errsize,
                 "node_id must be 1 to %d letters, digits, '.', '_' or '-', starting with a "
                 "letter or digit",
                 ENGINE_CONFIG_ID_MAX);
        return false;
    }
    if (!check_network(spec, loopback, err, errsize))
        return false;
    if (!check_path("data_dir", spec->data_dir, false, err, errsize) ||
        !check_path("pidfile", spec->pidfile, true, err, errsize) ||
        !check_path("logfile", spec->logfile, true, err, errsize))
        return false;
    bool tls =
        spec->tls_cert_file != NULL || spec->tls_key_file != NULL || spec->tls_ca_file != NULL;
    if (tls && (!check_path("tls_cert_file", spec->tls_cert_file, false, err, errsize) ||
                !check_path("tls_key_file", spec->tls_key_file, false, err, errsize) ||
                !check_path("tls_ca_file", spec->tls_ca_file, false, err, errsize)))
        return false;
    if (spec->reserved_memory_percent < 0 ||
        spec->reserved_memory_percent > ENGINE_CONFIG_RESERVED_MAX) {
        snprintf(err, errsize, "reserved_memory_percent must be from 0 to %d",
                 ENGINE_CONFIG_RESERVED_MAX);
        return false;
    }
    if (spec->memory_mib == 0 || spec->memory_mib > MEMORY_MIB_MAX) {
        snprintf(err, errsize, "memory_mib must be from 1 to %llu",
                 (unsigned long long)MEMORY_MIB_MAX);
        return false;
    }
    if (!engine_config_policy_valid(spec->maxmemory_policy)) {
        char buf[64], msg[256];
        one_of_message(policies, msg, sizeof(msg));
        snprintf(err, errsize, "maxmemory_policy \"%s\" %s",
                 spec->maxmemory_policy != NULL ? shown(spec->maxmemory_policy, buf, sizeof(buf))
                                                : "",
                 msg);
        return false;
    }
    if (spec->cluster_node_timeout_ms < ENGINE_CONFIG_NODE_TIMEOUT_MIN_MS ||
        spec->cluster_node_timeout_ms > ENGINE_CONFIG_NODE_TIMEOUT_MAX_MS) {
        snprintf(err, errsize, "cluster_node_timeout_ms must be from %d to %d",
                 ENGINE_CONFIG_NODE_TIMEOUT_MIN_MS, ENGINE_CONFIG_NODE_TIMEOUT_MAX_MS);
        return false;
    }
    if (spec->availability_zone != NULL &&
        !is_token(spec->availability_zone, ENGINE_CONFIG_ID_MAX)) {
        snprintf(err, errsize,
                 "availability_zone must be 1 to %d letters, digits, '.', '_' or '-', starting "
                 "with a letter or digit",
                 ENGINE_CONFIG_ID_MAX);
        return false;
    }
    return true;
}

/* Check every parameter, and that no directive is set twice (under its
 * name and an alias, say). canon[i] gets each one's directive name. */
static bool check_params(const struct engine_config_spec *spec, const char **canon, char *err,
                         size_t errsize)
{
    char nbuf[64], obuf[64];

    for (size_t i = 0; i < spec->n_params; i++) {
        const struct engine_config_param *p = &spec->params[i];
        if (p->name == NULL || p->value == NULL) {
            snprintf(err, errsize, "parameter %zu has no name or no value", i + 1);
            return false;
        }
        if (!engine_config_param_check(spec->kind, spec->line, p->name, p->value, &canon[i], err,
                                       errsize))
            return false;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(canon[i], canon[j]) != 0)
                continue;
            if (strcmp(p->name, spec->params[j].name) == 0)
                snprintf(err, errsize, "parameter \"%s\" is given twice",
                         shown(p->name, nbuf, sizeof(nbuf)));
            else
                snprintf(err, errsize, "parameters \"%s\" and \"%s\" set the same directive, %s",
                         shown(spec->params[j].name, obuf, sizeof(obuf)),
                         shown(p->name, nbuf, sizeof(nbuf)), canon[i]);
            return false;
        }
    }
    return true;
}

/* ---- Writing ----------------------------------------------------------- */

/* Characters a value may have without quotes: none of them is special to
 * the engines' config parser (quotes, backslash, space, '#'). */
#define BARE_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/:@+,=-"

/* Write "name value\n". A value with anything but BARE_CHARS (or empty) is
 * double-quoted, with backslash and quote escaped and every byte outside
 * printable ASCII written as \xHH -- which the engines' parser decodes --
 * so no value can break the line or the quoting. */
static void directive(struct strbuf *o, const char *name, const char *value)
{
    strbuf_printf(o, "%s ", name);
    if (value[0] != '\0' && strspn(value, BARE_CHARS) == strlen(value)) {
        strbuf_printf(o, "%s\n", value);
        return;
    }
    strbuf_printf(o, "\"");
    for (const unsigned char *p = (const unsigned char *)value; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            strbuf_printf(o, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            strbuf_printf(o, "\\x%02x", *p);
        else
            strbuf_printf(o, "%c", *p);
    }
    strbuf_printf(o, "\"\n");
}

static void directive_u64(struct strbuf *o, const char *name, uint64_t value)
{
    strbuf_printf(o, "%s %llu\n", name, (unsigned long long)value);
}

static const char *yes_no(bool b)
{
    return b ? "yes" : "no";
}

static void render_cluster(struct strbuf *o, const struct engine_config_spec *spec)
{
    size_t dlen = strlen(spec->data_dir);
    bool slash = dlen > 0 && spec->data_dir[dlen - 1] == '/';
    char *nodes_conf = xasprintf("%s%snodes.conf", spec->data_dir, slash ? "" : "/");

    directive(o, "cluster-enabled", "yes");
    /* Written by the engine: its view of the cluster, kept with the data. */
    directive(o, "cluster-config-file", nodes_conf);
    /* Failure detection takes about one node timeout, a failover a little
     * more. The engines' 15 s default suits clusters of hundreds of nodes
     * on busy networks; Cairn's clusters are small, so 5 s gives failovers
     * in seconds while staying well above the pauses a healthy node can
     * show (a fork of a large dataset, a burstable VM out of CPU credit),
     * which at 1 s or less would turn into false failovers. */
    directive_u64(o, "cluster-node-timeout", (uint64_t)spec->cluster_node_timeout_ms);
    /* Lets the engines' logs name peers by Cairn's node id, not only by
     * their 40-character engine ids. */
    if (available(spec->kind, spec->line, "cluster-announce-human-nodename"))
        directive(o, "cluster-announce-human-nodename", spec->node_id);
    /* Per-slot CPU and network counters (CLUSTER SLOT-STATS) feed hot-slot
     * advice. Not by default on Valkey 8.0: there its network counters trip
     * an assertion on the first write a replica serves after a failover
     * (valkey-io/valkey#1912, fixed in 8.1), crashing the new primary. A
     * user may still set the parameter. */
    if (available(spec->kind, spec->line, "cluster-slot-stats-enabled") &&
        engine_line_compare(spec->line, "8.1") >= 0)
        directive(o, "cluster-slot-stats-enabled", "yes");
    free(nodes_conf);
}

/* The tenant's access: every command but those that would reconfigure the
 * node, reach other hosts or take the node away from Cairn -- CONFIG, ACL,
 * REPLICAOF, the CLUSTER commands that change the topology, SHUTDOWN,
 * DEBUG, MODULE, CLIENT PAUSE and KILL, FAILOVER, SAVE and its kin,
 * MONITOR, SYNC, MIGRATE (all @admin or @dangerous) -- with the harmless
 * ones of those categories that applications and their tools use given
 * back. */
const char ENGINE_TENANT_ACCESS[] =
    "~* &* +@all -@admin -@dangerous +info +role +keys +sort +sort_ro +flushdb +flushall"
    " +lastsave +client|list +slowlog|get +slowlog|len +latency|latest +latency|history"
    " +latency|histogram +latency|doctor +latency|graph +cluster|replicas +cluster|slaves";

void engine_users_of(const struct engine_config_spec *spec, struct engine_user out[ENGINE_USERS])
{
    out[0] = (struct engine_user){ENGINE_ADMIN_USER, spec->admin_password, NULL, "~* &* +@all"};
    out[1] = (struct engine_user){ENGINE_REPLICATION_USER, spec->replication_password, NULL,
                                  "-@all +psync +replconf +ping"};
    out[2] = (struct engine_user){"default", spec->password, spec->previous_password,
                                  ENGINE_TENANT_ACCESS};
}

void engine_user_password_rule(const char *password, char rule[ENGINE_USER_RULE_LEN + 1])
{
    unsigned char digest[CRYPTO_SHA256_LEN];

    if (password == NULL || password[0] == '\0') {
        strcpy(rule, "nopass");
        return;
    }
    crypto_sha256(password, strlen(password), digest);
    rule[0] = '#';
    crypto_hex(digest, sizeof(digest), rule + 1);
}

/* The tenant (default user), Cairn, and replication, each with a password
 * of its own, kept as hashes. The replication password alone is written
 * as it is: a replica presents it to its primary (masterauth), so the
 * engine must read it back, and it opens nothing but PSYNC. */
static void render_users(struct strbuf *o, const struct engine_config_spec *spec)
{
    struct engine_user users[ENGINE_USERS];
    char rule[ENGINE_USER_RULE_LEN + 1];

    engine_users_of(spec, users);
    for (int i = ENGINE_USERS - 1; i >= 0; i--) {
        engine_user_password_rule(users[i].password, rule);
        strbuf_printf(o, "user %s reset on %s", users[i].name, rule);
        if (users[i].second_password != NULL && users[i].second_password[0] != '\0') {
            engine_user_password_rule(users[i].second_password, rule);
            strbuf_printf(o, " %s", rule);
        }
        strbuf_printf(o, " %s\n", users[i].access);
    }
    directive(o, "masteruser", ENGINE_REPLICATION_USER);
    directive(o, "masterauth", spec->replication_password);
}

static bool uses_tls(const struct engine_config_spec *spec)
{
    return spec->tls_cert_file != NULL;
}

/* Transit encryption: the node's port serves TLS only (port 0 closes the
 * plain one), and so do replication and the cluster bus, each engine
 * presenting its certificate to its peers and checking theirs against the
 * authority. Clients present none (as with ElastiCache): the AUTH token or
 * a user's password is what lets them in. */
static void render_tls(struct strbuf *o, const struct engine_config_spec *spec)
{
    directive(o, "port", "0");
    directive_u64(o, "tls-port", (uint64_t)spec->port);
    directive(o, "tls-cert-file", spec->tls_cert_file);
    directive(o, "tls-key-file", spec->tls_key_file);
    directive(o, "tls-ca-cert-file", spec->tls_ca_file);
    directive(o, "tls-auth-clients", "no");
    directive(o, "tls-replication", "yes");
    if (spec->cluster_enabled)
        directive(o, "tls-cluster", "yes");
}

static void render(struct strbuf *o, const struct engine_config_spec *spec, bool loopback,
                   const struct engine_config_sizes *sz, const char *const *canon)
{
    strbuf_printf(o, "# %s %s configuration for node %s, rendered by Cairn.\n",
                  engine_kind_name(spec->kind), spec->line, spec->node_id);
    strbuf_printf(o, "# Edits here are lost when it is rendered again: change the node's spec.\n");
    if (uses_tls(spec))
        render_tls(o, spec);
    else
        directive_u64(o, "port", (uint64_t)spec->port);
    directive(o, "bind", spec->bind);
    /* Protected mode only acts while the default user has no password.
     * Off loopback Cairn never renders without one, so there it would be
     * dead weight; on loopback (development, tests) the password is
     * optional and the guard stays. */
    directive(o, "protected-mode", yes_no(loopback));
    /* cairn-agent supervises the process: it must stay in the foreground. */
    directive(o, "daemonize", "no");
    directive(o, "dir", spec->data_dir);
    if (spec->pidfile != NULL)
        directive(o, "pidfile", spec->pidfile);
    directive(o, "logfile", spec->logfile != NULL ? spec->logfile : "");

    directive_u64(o, "maxmemory", sz->maxmemory);
    directive(o, "maxmemory-policy", spec->maxmemory_policy);

    /* Persistence. AOF, when on, is the durable copy (fsync once a second:
     * at most a second of writes lost on a crash, without an fsync per
     * write). RDB snapshots on timers are off either way (save ""): each
     * one forks, and a fork's copy-on-write is what the reserve pays for.
     * Full syncs and AOF rewrites fork already; timed snapshots on every
     * node would add forks at moments nobody chose, for durability that
     * AOF gives anyway, or that a cache run without AOF did not ask for.
     * Backups are explicit snapshots taken by an operation. */
    directive(o, "appendonly", yes_no(spec->appendonly));
    directive(o, "appendfsync", "everysec");
    directive(o, "save", "");

    /* Replication: stream the snapshot to replicas over the socket instead
     * of writing it to disk first, at once: the engines' default waits 5 s
     * for more replicas to share one transfer, which Cairn does not need
     * (it attaches a shard's replicas together) and which would hold every
     * new replica -- and every create -- back by those seconds. Then size
     * the buffers (see the top of this file). */
    directive(o, "repl-diskless-sync", "yes");
    directive(o, "repl-diskless-sync-delay", "0");
    directive_u64(o, "repl-backlog-size", sz->repl_backlog);
    strbuf_printf(o, "client-output-buffer-limit replica %llu 0 0\n",
                  (unsigned long long)sz->replica_buffer);

    if (spec->admin_password != NULL)
        render_users(o, spec);
    else if (has_password(spec)) {
        /* Rendered for an older cairnd: one secret for everyone. */
        directive(o, "requirepass", spec->password);
        directive(o, "masterauth", spec->password);
    }

    if (spec->cluster_enabled) {
        render_cluster(o, spec);
    } else {
        directive(o, "cluster-enabled", "no");
        /* A replica that restarts must come back following the group's
         * current primary, never as a second primary of its own. */
        if (spec->replicaof_host != NULL)
            strbuf_printf(o, "replicaof %s %d\n", spec->replicaof_host, spec->replicaof_port);
    }
    /* Lets clients prefer replicas in their own zone; informational, so
     * engines that cannot announce it simply do without. */
    if (spec->availability_zone != NULL && available(spec->kind, spec->line, "availability-zone"))
        directive(o, "availability-zone", spec->availability_zone);

    if (spec->n_params > 0)
        strbuf_printf(o, "# Parameters\n");
    for (size_t i = 0; i < spec->n_params; i++)
        directive(o, canon[i], spec->params[i].value);
}

/* Compute the sizes for spec, or explain why there are none. */
static bool check_sizes(const struct engine_config_spec *spec, struct engine_config_sizes *sz,
                        char *err, size_t errsize)
{
    if (engine_config_sizes(spec->memory_mib, spec->reserved_memory_percent, sz))
        return true;
    snprintf(err, errsize,
             "memory_mib %llu with reserved_memory_percent %d leaves less than %llu MiB for data",
             (unsigned long long)spec->memory_mib, spec->reserved_memory_percent,
             (unsigned long long)(MAXMEMORY_MIN / MIB));
    return false;
}

char *engine_config_render(const struct engine_config_spec *spec, char *err, size_t errsize)
{
    struct engine_config_sizes sz;
    const char **canon = xcalloc(spec->n_params, sizeof(*canon));
    bool loopback = false;
    char *text = NULL;

    if (check_spec(spec, &loopback, err, errsize) && check_params(spec, canon, err, errsize) &&
        check_sizes(spec, &sz, err, errsize)) {
        struct strbuf o;
        strbuf_init(&o, 2048);
        render(&o, spec, loopback, &sz, canon);
        text = o.p;
    }
    free(canon);
    return text;
}

static void guard(struct engine_setting *out, size_t *n, const char *name, const char *value)
{
    out[*n].name = name;
    snprintf(out[*n].value, sizeof(out[*n].value), "%s", value);
    (*n)++;
}

static void guard_u64(struct engine_setting *out, size_t *n, const char *name, uint64_t value)
{
    char text[32];
    snprintf(text, sizeof(text), "%llu", (unsigned long long)value);
    guard(out, n, name, text);
}

size_t engine_config_guarded(const struct engine_config_spec *spec,
                             struct engine_setting out[ENGINE_GUARDED_MAX], char *err,
                             size_t errsize)
{
    struct engine_config_sizes sz;
    bool loopback = false;
    size_t n = 0;

    if (spec->admin_password == NULL || spec->replication_password == NULL) {
        snprintf(err, errsize, "the spec has no users of Cairn's own");
        return 0;
    }
    if (!check_spec(spec, &loopback, err, errsize) || !check_sizes(spec, &sz, err, errsize))
        return 0;
    guard_u64(out, &n, "maxmemory", sz.maxmemory);
    guard(out, &n, "maxmemory-policy", spec->maxmemory_policy);
    guard(out, &n, "appendonly", yes_no(spec->appendonly));
    guard(out, &n, "appendfsync", "everysec");
    guard(out, &n, "save", "");
    guard_u64(out, &n, "port", uses_tls(spec) ? 0 : (uint64_t)spec->port);
    guard(out, &n, "bind", spec->bind);
    guard(out, &n, "protected-mode", yes_no(loopback));
    guard(out, &n, "repl-diskless-sync", "yes");
    guard(out, &n, "repl-diskless-sync-delay", "0");
    guard_u64(out, &n, "repl-backlog-size", sz.repl_backlog);
    guard(out, &n, "masteruser", ENGINE_REPLICATION_USER);
    guard(out, &n, "masterauth", spec->replication_password);
    guard_u64(out, &n, "tls-port", uses_tls(spec) ? (uint64_t)spec->port : 0);
    if (spec->cluster_enabled)
        guard_u64(out, &n, "cluster-node-timeout", (uint64_t)spec->cluster_node_timeout_ms);
    return n;
}
