/* cluster.c -- parsers for CLUSTER NODES, CLUSTER SLOTS and CLUSTER SHARDS, and the healing of
 * nodes.conf before an engine loads it. */
#define _GNU_SOURCE /* memmem */
#include "cluster.h"

#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"
#include "resp.h"
#include "xalloc.h"

/* ---- shared ---------------------------------------------------------- */

bool engine_cluster_id_valid(const char *s, size_t n)
{
    if (n != ENGINE_CLUSTER_ID_LEN)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isxdigit((unsigned char)s[i]))
            return false;
    }
    return true;
}

static void copy_id(char dst[ENGINE_CLUSTER_ID_LEN + 1], const char *src)
{
    memcpy(dst, src, ENGINE_CLUSTER_ID_LEN);
    dst[ENGINE_CLUSTER_ID_LEN] = '\0';
}

/* n bytes at s: a decimal integer within min..max. */
static bool span_in_range(const char *s, size_t n, long long min, long long max, long long *out)
{
    long long v;
    if (!engine_info_span_ll(s, n, &v) || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static bool str_in_range(const char *s, long long min, long long max, long long *out)
{
    return span_in_range(s, strlen(s), min, max, out);
}

static bool reply_in_range(const redisReply *r, long long min, long long max, long long *out)
{
    long long v;
    if (!resp_reply_integer(r, &v) || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static bool set_range(struct engine_cluster_range *range, long long start, long long end)
{
    if (start > end)
        return false;
    range->start = (int)start;
    range->end = (int)end;
    return true;
}

static char *dup_reply_str(const redisReply *r)
{
    return xstrndup(r->str, r->len);
}

/* Whether a whole reply to command (CLUSTER SLOTS or SHARDS) is an array,
 * as both send; if not, "<command>: " and why in err. */
static bool reply_is_top_array(const redisReply *reply, const char *command, char *err,
                               size_t errsize)
{
    char why[256];

    if (!resp_reply_check(reply, why, sizeof(why))) {
        snprintf(err, errsize, "%s: %s", command, why);
        return false;
    }
    if (reply->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errsize, "%s: expected an array", command);
        return false;
    }
    return true;
}

/* ---- CLUSTER NODES --------------------------------------------------- */

static const struct {
    const char *name;
    unsigned bit;
} flag_names[] = {
    {"myself", ENGINE_CLUSTER_MYSELF},
    {"master", ENGINE_CLUSTER_PRIMARY},
    {"slave", ENGINE_CLUSTER_REPLICA},
    {"fail?", ENGINE_CLUSTER_PFAIL},
    {"fail", ENGINE_CLUSTER_FAIL},
    {"handshake", ENGINE_CLUSTER_HANDSHAKE},
    {"noaddr", ENGINE_CLUSTER_NOADDR},
    {"nofailover", ENGINE_CLUSTER_NOFAILOVER},
    {"noflags", 0},
};

static unsigned parse_flags(const char *s)
{
    unsigned flags = 0;

    for (const char *p = s;;) {
        size_t n = strcspn(p, ",");
        for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++) {
            if (strlen(flag_names[i].name) == n && memcmp(flag_names[i].name, p, n) == 0)
                flags |= flag_names[i].bit;
        }
        if (p[n] == '\0')
            return flags;
        p += n + 1;
    }
}

/* "ip:port@cport[,hostname[,key=value...]]", cut in place. */
static bool parse_address(char *s, struct engine_cluster_node *node)
{
    long long port, cport;
    char *at = strchr(s, '@');
    if (at == NULL)
        return false;
    *at = '\0';
    char *colon = strrchr(s, ':');
    if (colon == NULL || !str_in_range(colon + 1, 0, 65535, &port))
        return false;
    *colon = '\0';

    char *bus = at + 1;
    char *extra = strchr(bus, ',');
    if (extra != NULL)
        *extra++ = '\0';
    if (!str_in_range(bus, 0, 65535, &cport))
        return false;
    node->ip = xstrdup(s);
    node->port = (int)port;
    node->cport = (int)cport;
    if (extra != NULL) {
        /* The first item is the hostname, unless it is an aux field (k=v). */
        size_t n = strcspn(extra, ",");
        if (n > 0 && memchr(extra, '=', n) == NULL)
            node->hostname = xstrndup(extra, n);
    }
    return true;
}

/* One slot entry: "N", "N-M", "[N->-id]" or "[N-<-id]". */
static bool parse_slot_entry(const char *s, struct engine_cluster_node *node)
{
    const long long max = ENGINE_CLUSTER_SLOTS - 1;
    long long a, b;
    size_t n = strlen(s);

    if (s[0] == '[') {
        struct engine_cluster_migration *m = &node->migrations[node->nmigrations];
        const char *arrow = strstr(s, "->-");
        m->importing = arrow == NULL;
        if (arrow == NULL)
            arrow = strstr(s, "-<-");
        if (arrow == NULL || s[n - 1] != ']' ||
            !span_in_range(s + 1, (size_t)(arrow - s - 1), 0, max, &a))
            return false;
        const char *peer = arrow + 3;
        if (!engine_cluster_id_valid(peer, (size_t)(s + n - 1 - peer)))
            return false;
        m->slot = (int)a;
        copy_id(m->peer, peer);
        node->nmigrations++;
        return true;
    }
    const char *dash = strchr(s, '-');
    if (dash == NULL) {
        if (!span_in_range(s, n, 0, max, &a))
            return false;
        b = a;
    } else if (!span_in_range(s, (size_t)(dash - s), 0, max, &a) ||
               !str_in_range(dash + 1, 0, max, &b)) {
        return false;
    }
    return set_range(&node->ranges[node->nranges++], a, b);
}

static size_t count_words(const char *s)
{
    size_t n = 1;
    for (; *s; s++)
        n += *s == ' ';
    return n;
}

/* Parse one NUL-terminated line, cutting it in place. */
static bool parse_node_line(char *line, struct engine_cluster_node *node, char *why, size_t whysize)
{
    enum { ID, ADDR, FLAGS, PRIMARY, PING, PONG, EPOCH, LINK, NFIELDS };
    char *f[NFIELDS];
    char *save = NULL;
    long long v[3];

    for (int i = 0; i < NFIELDS; i++) {
        f[i] = strtok_r(i == 0 ? line : NULL, " ", &save);
        if (f[i] == NULL) {
            snprintf(why, whysize, "expected at least %d fields, got %d", NFIELDS, i);
            return false;
        }
    }
    if (!engine_cluster_id_valid(f[ID], strlen(f[ID]))) {
        snprintf(why, whysize, "bad node id \"%.64s\"", f[ID]);
        return false;
    }
    copy_id(node->id, f[ID]);
    if (!parse_address(f[ADDR], node)) {
        snprintf(why, whysize, "bad address \"%.128s\"", f[ADDR]);
        return false;
    }
    node->flags = parse_flags(f[FLAGS]);
    if (strcmp(f[PRIMARY], "-") != 0) {
        if (!engine_cluster_id_valid(f[PRIMARY], strlen(f[PRIMARY]))) {
            snprintf(why, whysize, "bad primary id \"%.64s\"", f[PRIMARY]);
            return false;
        }
        copy_id(node->primary_id, f[PRIMARY]);
    }
    for (int i = PING; i <= EPOCH; i++) {
        if (!str_in_range(f[i], 0, LLONG_MAX, &v[i - PING])) {
            snprintf(why, whysize, "bad number \"%.32s\"", f[i]);
            return false;
        }
    }
    node->ping_sent = v[0];
    node->pong_recv = v[1];
    node->config_epoch = v[2];
    if (strcmp(f[LINK], "connected") != 0 && strcmp(f[LINK], "disconnected") != 0) {
        snprintf(why, whysize, "bad link state \"%.32s\"", f[LINK]);
        return false;
    }
    node->connected = strcmp(f[LINK], "connected") == 0;

    size_t max = save != NULL ? count_words(save) : 0;
    node->ranges = xcalloc(max, sizeof(*node->ranges));
    node->migrations = xcalloc(max, sizeof(*node->migrations));
    for (char *s = strtok_r(NULL, " ", &save); s != NULL; s = strtok_r(NULL, " ", &save)) {
        if (!parse_slot_entry(s, node)) {
            snprintf(why, whysize, "bad slot entry \"%.128s\"", s);
            return false;
        }
    }
    return true;
}

bool engine_cluster_nodes_parse(const char *text, size_t len, struct engine_cluster_nodes *out,
                                char *err, size_t errsize)
{
    char *copy = xstrndup(len > 0 ? text : "", len);
    size_t lines = 1, lineno = 0;
    char why[256];

    memset(out, 0, sizeof(*out));
    for (const char *p = copy; *p; p++)
        lines += *p == '\n';
    out->nodes = xcalloc(lines, sizeof(*out->nodes));

    for (char *p = copy, *next; p != NULL; p = next) {
        char *nl = strchr(p, '\n');
        next = nl != NULL ? nl + 1 : NULL;
        if (nl != NULL)
            *nl = '\0';
        size_t n = strlen(p);
        while (n > 0 && p[n - 1] == '\r')
            p[--n] = '\0';
        lineno++;
        if (n == 0)
            continue;
        /* Count the node first, so a failure frees what it holds. */
        if (!parse_node_line(p, &out->nodes[out->count++], why, sizeof(why))) {
            snprintf(err, errsize, "CLUSTER NODES line %zu: %s", lineno, why);
            engine_cluster_nodes_free(out);
            free(copy);
            return false;
        }
    }
    free(copy);
    return true;
}

void engine_cluster_nodes_free(struct engine_cluster_nodes *nodes)
{
    for (size_t i = 0; i < nodes->count; i++) {
        free(nodes->nodes[i].ip);
        free(nodes->nodes[i].hostname);
        free(nodes->nodes[i].ranges);
        free(nodes->nodes[i].migrations);
    }
    free(nodes->nodes);
    memset(nodes, 0, sizeof(*nodes));
}

const struct engine_cluster_node *
engine_cluster_nodes_myself(const struct engine_cluster_nodes *nodes)
{
    for (size_t i = 0; i < nodes->count; i++) {
        if (nodes->nodes[i].flags & ENGINE_CLUSTER_MYSELF)
            return &nodes->nodes[i];
    }
    return NULL;
}

const struct engine_cluster_node *
engine_cluster_nodes_find(const struct engine_cluster_nodes *nodes, const char *id)
{
    for (size_t i = 0; i < nodes->count; i++) {
        if (strcmp(nodes->nodes[i].id, id) == 0)
            return &nodes->nodes[i];
    }
    return NULL;
}

int engine_cluster_node_slot_count(const struct engine_cluster_node *node)
{
    int n = 0;
    for (size_t i = 0; i < node->nranges; i++)
        n += node->ranges[i].end - node->ranges[i].start + 1;
    return n;
}

/* ---- CLUSTER SLOTS --------------------------------------------------- */

/* Metadata value key, if present: it must then be a string. */
static bool optional_string(const redisReply *map, const char *key, char **out)
{
    const redisReply *v = resp_reply_map_get(map, key);
    if (v == NULL)
        return true;
    if (!resp_reply_is_string(v))
        return false;
    *out = dup_reply_str(v);
    return true;
}

/* [endpoint, port, id, {hostname, ip, ...}] */
static bool parse_endpoint(const redisReply *r, struct engine_cluster_endpoint *ep)
{
    long long port;

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        !reply_in_range(r->element[1], 0, 65535, &port))
        return false;
    const redisReply *endpoint = r->element[0], *id = r->element[2];
    if (endpoint->type != REDIS_REPLY_NIL && !resp_reply_is_string(endpoint))
        return false;
    if (!resp_reply_is_string(id) || !engine_cluster_id_valid(id->str, id->len))
        return false;
    ep->port = (int)port;
    copy_id(ep->id, id->str);
    if (endpoint->type != REDIS_REPLY_NIL)
        ep->endpoint = dup_reply_str(endpoint);
    if (r->elements < 4)
        return true;
    const redisReply *meta = r->element[3];
    return resp_reply_is_map(meta) && optional_string(meta, "hostname", &ep->hostname) &&
           optional_string(meta, "ip", &ep->ip);
}

static bool parse_slot_entry_reply(const redisReply *r, struct engine_cluster_slot_entry *e,
                                   char *why, size_t whysize)
{
    const long long max = ENGINE_CLUSTER_SLOTS - 1;
    long long start, end;

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3) {
        snprintf(why, whysize, "expected [start, end, primary, replica...]");
        return false;
    }
    if (!reply_in_range(r->element[0], 0, max, &start) ||
        !reply_in_range(r->element[1], 0, max, &end) || !set_range(&e->range, start, end)) {
        snprintf(why, whysize, "bad slot range");
        return false;
    }
    e->nodes = xcalloc(r->elements - 2, sizeof(*e->nodes));
    for (size_t k = 2; k < r->elements; k++) {
        /* Count the node first, so a failure frees what it holds. */
        if (!parse_endpoint(r->element[k], &e->nodes[e->nnodes++])) {
            snprintf(why, whysize, "malformed node %zu", k - 2);
            return false;
        }
    }
    return true;
}

bool engine_cluster_slots_parse(const redisReply *reply, struct engine_cluster_slots *out,
                                char *err, size_t errsize)
{
    char why[256];

    memset(out, 0, sizeof(*out));
    if (!reply_is_top_array(reply, "CLUSTER SLOTS", err, errsize))
        return false;
    out->entries = xcalloc(reply->elements, sizeof(*out->entries));
    for (size_t i = 0; i < reply->elements; i++) {
        if (!parse_slot_entry_reply(reply->element[i], &out->entries[out->count++], why,
                                    sizeof(why))) {
            snprintf(err, errsize, "CLUSTER SLOTS: entry %zu: %s", i, why);
            engine_cluster_slots_free(out);
            return false;
        }
    }
    return true;
}

static void endpoint_free(struct engine_cluster_endpoint *ep)
{
    free(ep->endpoint);
    free(ep->ip);
    free(ep->hostname);
}

void engine_cluster_slots_free(struct engine_cluster_slots *slots)
{
    for (size_t i = 0; i < slots->count; i++) {
        for (size_t k = 0; k < slots->entries[i].nnodes; k++)
            endpoint_free(&slots->entries[i].nodes[k]);
        free(slots->entries[i].nodes);
    }
    free(slots->entries);
    memset(slots, 0, sizeof(*slots));
}

/* ---- CLUSTER SHARDS -------------------------------------------------- */

static const char *const health_names[] = {
    [ENGINE_CLUSTER_HEALTH_UNKNOWN] = "unknown",
    [ENGINE_CLUSTER_HEALTH_ONLINE] = "online",
    [ENGINE_CLUSTER_HEALTH_FAIL] = "fail",
    [ENGINE_CLUSTER_HEALTH_LOADING] = "loading",
};

const char *engine_cluster_health_name(enum engine_cluster_health health)
{
    if ((size_t)health >= sizeof(health_names) / sizeof(health_names[0]))
        return "unknown";
    return health_names[health];
}

static bool reply_equals(const redisReply *r, const char *s)
{
    return resp_reply_is_string(r) && r->len == strlen(s) && memcmp(r->str, s, r->len) == 0;
}

/* Look up a required key; write "missing or malformed <key>" if absent. */
static const redisReply *require(const redisReply *map, const char *key, char *why, size_t whysize)
{
    const redisReply *v = resp_reply_map_get(map, key);
    if (v == NULL)
        snprintf(why, whysize, "missing \"%s\"", key);
    return v;
}

static bool bad_value(const char *key, char *why, size_t whysize)
{
    snprintf(why, whysize, "malformed \"%s\"", key);
    return false;
}

static bool parse_port_key(const redisReply *map, const char *key, int *port)
{
    long long v;
    const redisReply *r = resp_reply_map_get(map, key);
    if (r == NULL)
        return true;
    if (!reply_in_range(r, 0, 65535, &v))
        return false;
    *port = (int)v;
    return true;
}

static bool parse_shard_node(const redisReply *map, struct engine_cluster_shard_node *node,
                             char *why, size_t whysize)
{
    const redisReply *v;

    if (!resp_reply_is_map(map)) {
        snprintf(why, whysize, "expected a map");
        return false;
    }
    if ((v = require(map, "id", why, whysize)) == NULL)
        return false;
    if (!resp_reply_is_string(v) || !engine_cluster_id_valid(v->str, v->len))
        return bad_value("id", why, whysize);
    copy_id(node->id, v->str);

    if (!parse_port_key(map, "port", &node->port))
        return bad_value("port", why, whysize);
    if (!parse_port_key(map, "tls-port", &node->tls_port))
        return bad_value("tls-port", why, whysize);
    if (node->port == 0 && node->tls_port == 0) {
        snprintf(why, whysize, "neither \"port\" nor \"tls-port\"");
        return false;
    }

    if ((v = require(map, "ip", why, whysize)) == NULL)
        return false;
    if (!resp_reply_is_string(v))
        return bad_value("ip", why, whysize);
    node->ip = dup_reply_str(v);

    if ((v = require(map, "endpoint", why, whysize)) == NULL)
        return false;
    if (v->type != REDIS_REPLY_NIL && !resp_reply_is_string(v))
        return bad_value("endpoint", why, whysize);
    if (v->type != REDIS_REPLY_NIL)
        node->endpoint = dup_reply_str(v);

    if (!optional_string(map, "hostname", &node->hostname))
        return bad_value("hostname", why, whysize);

    if ((v = require(map, "role", why, whysize)) == NULL)
        return false;
    if (!reply_equals(v, "master") && !reply_equals(v, "replica"))
        return bad_value("role", why, whysize);
    node->primary = reply_equals(v, "master");

    if ((v = require(map, "replication-offset", why, whysize)) == NULL)
        return false;
    if (!resp_reply_integer(v, &node->replication_offset))
        return bad_value("replication-offset", why, whysize);

    if ((v = require(map, "health", why, whysize)) == NULL)
        return false;
    if (!resp_reply_is_string(v))
        return bad_value("health", why, whysize);
    node->health = ENGINE_CLUSTER_HEALTH_UNKNOWN;
    for (size_t i = 1; i < sizeof(health_names) / sizeof(health_names[0]); i++) {
        if (reply_equals(v, health_names[i]))
            node->health = (enum engine_cluster_health)i;
    }
    return true;
}

/* "slots": [start, end, start, end, ...] */
static bool parse_shard_slots(const redisReply *r, struct engine_cluster_shard *shard)
{
    const long long max = ENGINE_CLUSTER_SLOTS - 1;
    long long start, end;

    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0)
        return false;
    shard->ranges = xcalloc(r->elements / 2, sizeof(*shard->ranges));
    for (size_t i = 0; i < r->elements; i += 2) {
        if (!reply_in_range(r->element[i], 0, max, &start) ||
            !reply_in_range(r->element[i + 1], 0, max, &end) ||
            !set_range(&shard->ranges[shard->nranges], start, end))
            return false;
        shard->nranges++;
    }
    return true;
}

static bool parse_shard(const redisReply *map, struct engine_cluster_shard *shard, char *why,
                        size_t whysize)
{
    const redisReply *v;
    char sub[200];

    if (!resp_reply_is_map(map)) {
        snprintf(why, whysize, "expected a map");
        return false;
    }
    if ((v = require(map, "slots", why, whysize)) == NULL)
        return false;
    if (!parse_shard_slots(v, shard))
        return bad_value("slots", why, whysize);
    if ((v = require(map, "nodes", why, whysize)) == NULL)
        return false;
    if (v->type != REDIS_REPLY_ARRAY)
        return bad_value("nodes", why, whysize);
    shard->nodes = xcalloc(v->elements, sizeof(*shard->nodes));
    for (size_t i = 0; i < v->elements; i++) {
        /* Count the node first, so a failure frees what it holds. */
        if (!parse_shard_node(v->element[i], &shard->nodes[shard->nnodes++], sub, sizeof(sub))) {
            snprintf(why, whysize, "node %zu: %s", i, sub);
            return false;
        }
    }
    return true;
}

bool engine_cluster_shards_parse(const redisReply *reply, struct engine_cluster_shards *out,
                                 char *err, size_t errsize)
{
    char why[256];

    memset(out, 0, sizeof(*out));
    if (!reply_is_top_array(reply, "CLUSTER SHARDS", err, errsize))
        return false;
    out->shards = xcalloc(reply->elements, sizeof(*out->shards));
    for (size_t i = 0; i < reply->elements; i++) {
        if (!parse_shard(reply->element[i], &out->shards[out->count++], why, sizeof(why))) {
            snprintf(err, errsize, "CLUSTER SHARDS: shard %zu: %s", i, why);
            engine_cluster_shards_free(out);
            return false;
        }
    }
    return true;
}

void engine_cluster_shards_free(struct engine_cluster_shards *shards)
{
    for (size_t i = 0; i < shards->count; i++) {
        struct engine_cluster_shard *s = &shards->shards[i];
        for (size_t k = 0; k < s->nnodes; k++) {
            free(s->nodes[k].ip);
            free(s->nodes[k].endpoint);
            free(s->nodes[k].hostname);
        }
        free(s->nodes);
        free(s->ranges);
    }
    free(shards->shards);
    memset(shards, 0, sizeof(*shards));
}

const struct engine_cluster_shard_node *
engine_cluster_shard_primary(const struct engine_cluster_shard *shard)
{
    for (size_t i = 0; i < shard->nnodes; i++) {
        if (shard->nodes[i].primary && shard->nodes[i].health != ENGINE_CLUSTER_HEALTH_FAIL)
            return &shard->nodes[i];
    }
    return NULL;
}

/* ---- nodes.conf ------------------------------------------------------------- */

#define SHARD_ID_KEY ",shard-id="

/* One line of nodes.conf: its node id, where its shard id's 40 digits are
 * (NULL: none), whether it is a replica and of which primary. */
struct conf_line {
    const char *id, *shard, *primary;
    bool replica;
};

/* The n-th space-separated field of the line [s, end), or NULL; *flen its
 * length. */
static const char *conf_field(const char *s, const char *end, int n, size_t *flen)
{
    for (int i = 0; s < end; i++) {
        const char *sp = memchr(s, ' ', (size_t)(end - s));
        const char *stop = sp != NULL ? sp : end;
        if (i == n) {
            *flen = (size_t)(stop - s);
            return s;
        }
        s = stop + 1;
    }
    return NULL;
}

static bool conf_line_parse(const char *s, const char *end, struct conf_line *out)
{
    size_t idlen = 0, addrlen = 0, flagslen = 0, primarylen = 0;
    const char *id = conf_field(s, end, 0, &idlen), *addr = conf_field(s, end, 1, &addrlen);
    const char *flags = conf_field(s, end, 2, &flagslen);
    const char *primary = conf_field(s, end, 3, &primarylen);
    if (primary == NULL || !engine_cluster_id_valid(id, idlen))
        return false;
    *out = (struct conf_line){.id = id};
    for (const char *f = flags; f < flags + flagslen;) {
        const char *comma = memchr(f, ',', (size_t)(flags + flagslen - f));
        const char *stop = comma != NULL ? comma : flags + flagslen;
        if (stop - f == 5 && memcmp(f, "slave", 5) == 0)
            out->replica = true;
        f = stop + 1;
    }
    if (out->replica && engine_cluster_id_valid(primary, primarylen))
        out->primary = primary;
    const char *key = memmem(addr, addrlen, SHARD_ID_KEY, strlen(SHARD_ID_KEY));
    if (key != NULL) {
        const char *digits = key + strlen(SHARD_ID_KEY);
        size_t left = (size_t)(addr + addrlen - digits);
        if (left >= ENGINE_CLUSTER_ID_LEN && engine_cluster_id_valid(digits, ENGINE_CLUSTER_ID_LEN))
            out->shard = digits;
    }
    return true;
}

char *engine_nodes_conf_heal(const char *text, size_t len, size_t *healed)
{
    struct conf_line *lines = NULL;
    size_t n = 0, cap = 0;

    for (const char *s = text, *end; s < text + len; s = end + 1) {
        end = memchr(s, '\n', (size_t)(text + len - s));
        if (end == NULL)
            end = text + len;
        struct conf_line l;
        if (!conf_line_parse(s, end, &l))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            lines = xrealloc(lines, cap * sizeof(*lines));
        }
        lines[n++] = l;
    }
    char *out = NULL;
    *healed = 0;
    for (size_t i = 0; i < n; i++) {
        if (lines[i].primary == NULL || lines[i].shard == NULL)
            continue;
        for (size_t j = 0; j < n; j++) {
            if (memcmp(lines[j].id, lines[i].primary, ENGINE_CLUSTER_ID_LEN) != 0 ||
                lines[j].shard == NULL ||
                memcmp(lines[j].shard, lines[i].shard, ENGINE_CLUSTER_ID_LEN) == 0)
                continue;
            if (out == NULL) {
                out = xmalloc(len + 1);
                memcpy(out, text, len);
                out[len] = '\0';
            }
            memcpy(out + (lines[i].shard - text), lines[j].shard, ENGINE_CLUSTER_ID_LEN);
            (*healed)++;
            break;
        }
    }
    free(lines);
    return out;
}

/* ---- hash slots ------------------------------------------------------------------ */

/* CRC16-CCITT (XMODEM): polynomial 0x1021, initial 0, bit by bit into a
 * table built on first use. */
static uint16_t crc16_table[256];
static pthread_once_t crc16_once = PTHREAD_ONCE_INIT;

static void crc16_build(void)
{
    for (int i = 0; i < 256; i++) {
        uint16_t crc = (uint16_t)(i << 8);
        for (int b = 0; b < 8; b++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
        crc16_table[i] = crc;
    }
}

static uint16_t crc16(const unsigned char *p, size_t len)
{
    uint16_t crc = 0;
    pthread_once(&crc16_once, crc16_build);
    for (size_t i = 0; i < len; i++)
        crc = (uint16_t)((crc << 8) ^ crc16_table[((crc >> 8) ^ p[i]) & 0xff]);
    return crc;
}

int engine_key_slot(const void *key, size_t len)
{
    const unsigned char *k = key;
    const unsigned char *open = memchr(k, '{', len);
    if (open != NULL) {
        size_t from = (size_t)(open - k) + 1;
        const unsigned char *close = memchr(k + from, '}', len - from);
        if (close != NULL && close > k + from) {
            k += from;
            len = (size_t)(close - k);
        }
    }
    return crc16(k, len) & 16383;
}
