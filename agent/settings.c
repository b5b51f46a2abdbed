/* settings.c -- flags, environment and config file for cairn-agent. */
#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "usage.h"
#include "xalloc.h"

/* Each setting once: its flag and file key, its variable, what usage calls
 * its value, whether it must be given, its default (NULL: none, or the
 * machine's -- see agent_settings_resolve()), and what a value must be: an
 * integer from min to max (in seconds where said), or as the hint says
 * (checked in store(), or by label_max for a name the protocol carries).
 * The flags, the usage text and the messages all come from here. */
static const struct setting {
    const char *name;
    const char *env;
    const char *metavar;
    bool required;
    const char *fallback;
    const char *hint; /* NULL: an integer from min to max */
    long min, max;
    bool seconds;
    size_t label_max; /* > 0: 1 to label_max of [A-Za-z0-9._-] */
} settings[AGENT_SET_COUNT] = {
    [AGENT_SET_CONTROL_PLANE] = {"control-plane", "CAIRN_AGENT_CONTROL_PLANE", "URL", true, NULL,
                                 "an http:// or https:// URL, or several comma-separated"},
    [AGENT_SET_CONTROL_PLANE_CA] = {"control-plane-ca-file", "CAIRN_AGENT_CONTROL_PLANE_CA_FILE",
                                    "PATH", false, NULL, "a PEM file"},
    [AGENT_SET_BOOTSTRAP_TOKEN] = {"bootstrap-token", "CAIRN_AGENT_BOOTSTRAP_TOKEN", "TOKEN", false,
                                   NULL, "a value"},
    [AGENT_SET_JOIN_TOKEN] = {"join-token", "CAIRN_AGENT_JOIN_TOKEN", "TOKEN", false, NULL,
                              "a value"},
    [AGENT_SET_AZ] = {"az", "CAIRN_AGENT_AZ", "AZ", true, NULL, "1 to 32 of [A-Za-z0-9._-]",
                      .label_max = 32},
    [AGENT_SET_DATA_DIR] = {"data-dir", "CAIRN_AGENT_DATA_DIR", "DIR", true, NULL, "a directory"},
    [AGENT_SET_PORTS] = {"ports", "CAIRN_AGENT_PORTS", "MIN-MAX", true, NULL,
                         "MIN-MAX with 1024 <= MIN <= MAX <= 65535"},
    [AGENT_SET_ADDRESS] = {"address", "CAIRN_AGENT_ADDRESS", "IP", false, "127.0.0.1",
                           "an address of 1 to 255 characters"},
    [AGENT_SET_VCPUS] = {"vcpus", "CAIRN_AGENT_VCPUS", "N", .min = 1, .max = 1024},
    [AGENT_SET_MEMORY_MIB] = {"memory-mib", "CAIRN_AGENT_MEMORY_MIB", "M", .min = 64,
                              .max = 16777216},
    [AGENT_SET_NAME] = {"name", "CAIRN_AGENT_NAME", "NAME", false, NULL,
                        "1 to 63 of [A-Za-z0-9._-]", .label_max = 63},
    [AGENT_SET_LOG_LEVEL] = {"log-level", "CAIRN_AGENT_LOG_LEVEL", "LEVEL", false, "info",
                             "debug, info, warn or error"},
    [AGENT_SET_METRICS_INTERVAL] = {"metrics-interval", "CAIRN_AGENT_METRICS_INTERVAL", "S", false,
                                    "10", NULL, 1, 3600, true},
    [AGENT_SET_METRICS_PERIOD] = {"metrics-period", "CAIRN_AGENT_METRICS_PERIOD", "S", false, "60",
                                  NULL, 1, 3600, true},
    [AGENT_SET_ENGINE_USER] = {"engine-user", "CAIRN_AGENT_ENGINE_USER", "USER", false, NULL,
                               "a user name"},
    [AGENT_SET_ENGINE_PATH] = {"engine-path", "CAIRN_AGENT_ENGINE_PATH", "PATH", false, NULL,
                               "a path"},
};

const char *agent_settings_name(enum agent_setting_id id)
{
    return settings[id].name;
}

bool agent_settings_set(struct agent_settings_layer *layer, const char *key, const char *value,
                        const char *origin, char *err, size_t errsize)
{
    for (int i = 0; i < AGENT_SET_COUNT; i++) {
        if (strcmp(settings[i].name, key) != 0)
            continue;
        if (i == AGENT_SET_ENGINE_PATH) {
            if (layer->n_engine_paths == AGENT_MAX_ENGINE_PATHS) {
                snprintf(err, errsize, "%s: at most %d engine paths", origin,
                         AGENT_MAX_ENGINE_PATHS);
                return false;
            }
            layer->engine_paths[layer->n_engine_paths++] = xstrdup(value);
            return true;
        }
        free(layer->value[i]);
        layer->value[i] = xstrdup(value);
        return true;
    }
    snprintf(err, errsize, "%s: unknown setting '%s'", origin, key);
    return false;
}

bool agent_settings_from_env(struct agent_settings_layer *layer, char *err, size_t errsize)
{
    for (int i = 0; i < AGENT_SET_COUNT; i++) {
        const char *v = getenv(settings[i].env);
        if (v == NULL || v[0] == '\0')
            continue;
        if (i != AGENT_SET_ENGINE_PATH) {
            if (!agent_settings_set(layer, settings[i].name, v, settings[i].env, err, errsize))
                return false;
            continue;
        }
        /* A PATH-like list: "/opt/a/valkey-server:/opt/b/redis-server". */
        for (const char *p = v; *p != '\0';) {
            size_t n = strcspn(p, ":");
            if (n > 0) {
                char *one = xstrndup(p, n);
                bool ok =
                    agent_settings_set(layer, settings[i].name, one, settings[i].env, err, errsize);
                free(one);
                if (!ok)
                    return false;
            }
            p += n;
            if (*p == ':')
                p++;
        }
    }
    return true;
}

/* Trim [*start, *end) of surrounding white space. */
static void trim(const char **start, const char **end)
{
    while (*start < *end && isspace((unsigned char)**start))
        (*start)++;
    while (*end > *start && isspace((unsigned char)(*end)[-1]))
        (*end)--;
}

bool agent_settings_from_text(struct agent_settings_layer *layer, const char *text,
                              const char *name, char *err, size_t errsize)
{
    int lineno = 0;

    for (const char *line = text; *line != '\0';) {
        const char *eol = line + strcspn(line, "\n");
        const char *next = *eol == '\n' ? eol + 1 : eol;
        const char *ks = line, *ke = eol;
        char origin[300];

        lineno++;
        snprintf(origin, sizeof(origin), "%s:%d", name, lineno);
        trim(&ks, &ke);
        if (ks == ke || *ks == '#') {
            line = next;
            continue;
        }
        const char *eq = memchr(ks, '=', (size_t)(ke - ks));
        if (eq == NULL) {
            snprintf(err, errsize, "%s: expected 'key = value'", origin);
            return false;
        }
        const char *vs = eq + 1, *ve = ke;
        ke = eq;
        trim(&ks, &ke);
        trim(&vs, &ve);
        char *key = xstrndup(ks, (size_t)(ke - ks));
        char *value = xstrndup(vs, (size_t)(ve - vs));
        bool ok = agent_settings_set(layer, key, value, origin, err, errsize);
        free(key);
        free(value);
        if (!ok)
            return false;
        line = next;
    }
    return true;
}

bool agent_settings_from_file(struct agent_settings_layer *layer, const char *path, char *err,
                              size_t errsize)
{
    FILE *f = fopen(path, "r");
    char *text = NULL;
    size_t len = 0, cap = 0;

    if (f == NULL) {
        snprintf(err, errsize, "could not open config file \"%s\": %s", path, strerror(errno));
        return false;
    }
    for (;;) {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 8192;
            text = xrealloc(text, cap);
        }
        size_t n = fread(text + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
    }
    bool failed = ferror(f);
    fclose(f);
    text[len] = '\0';
    if (failed) {
        snprintf(err, errsize, "could not read config file \"%s\"", path);
        free(text);
        return false;
    }
    bool ok = agent_settings_from_text(layer, text, path, err, errsize);
    free(text);
    return ok;
}

bool agent_settings_parse_ports(const char *text, int *min, int *max)
{
    char *end;
    long a, b;

    if (!isdigit((unsigned char)text[0]))
        return false;
    errno = 0;
    a = strtol(text, &end, 10);
    if (errno != 0 || *end != '-' || !isdigit((unsigned char)end[1]))
        return false;
    b = strtol(end + 1, &end, 10);
    if (errno != 0 || *end != '\0' || a < 1024 || b > 65535 || a > b)
        return false;
    *min = (int)a;
    *max = (int)b;
    return true;
}

/* A name or AZ as the protocol allows: 1..max of [A-Za-z0-9._-]. */
static bool valid_label(const char *s, size_t max)
{
    size_t n = strlen(s);

    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-')
            return false;
    }
    return true;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;

    if (!isdigit((unsigned char)s[0]))
        return false;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* The highest layer's value of a setting, or NULL. */
static const char *pick(const struct agent_settings_layer *layers, size_t n, int id)
{
    for (size_t i = 0; i < n; i++) {
        if (layers[i].value[id] != NULL)
            return layers[i].value[id];
    }
    return NULL;
}

/* Whether v[0..len) is an http:// or https:// URL with a host part and
 * nothing blank or unprintable in it. */
static bool is_base_url(const char *v, size_t len)
{
    size_t scheme = strncmp(v, "http://", 7) == 0 ? 7 : strncmp(v, "https://", 8) == 0 ? 8 : 0;

    if (scheme == 0 || len <= scheme || v[scheme] == '/')
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!isgraph((unsigned char)v[i]))
            return false;
    }
    return true;
}

/* One cairnd's URL, or several (each cairnd, behind no load balancer;
 * comma-separated, tried in turn): kept without trailing '/'. */
static bool store_control_plane(struct agent_settings *out, const char *v)
{
    char *list = xcalloc(strlen(v) + 1, 1);
    size_t at = 0;

    for (size_t n = 0;; n++) {
        size_t len = strcspn(v, ",");
        if (n == AGENT_CP_MAX_URLS || !is_base_url(v, len)) {
            free(list);
            return false;
        }
        size_t keep = len;
        while (v[keep - 1] == '/')
            keep--;
        if (at > 0)
            list[at++] = ',';
        memcpy(list + at, v, keep);
        at += keep;
        if (v[len] == '\0')
            break;
        v += len + 1;
    }
    free(out->control_plane);
    out->control_plane = list;
    return true;
}

/* Store the value v of setting id (n: v as an integer, for the integer
 * settings) in out. False when v is not what the setting takes. */
static bool store(struct agent_settings *out, int id, const char *v, long n)
{
    switch (id) {
    case AGENT_SET_CONTROL_PLANE:
        return store_control_plane(out, v);
    case AGENT_SET_CONTROL_PLANE_CA:
        if (v[0] == '\0')
            return false;
        out->control_plane_ca = xstrdup(v);
        return true;
    case AGENT_SET_BOOTSTRAP_TOKEN:
        out->bootstrap_token = xstrdup(v);
        return true;
    case AGENT_SET_JOIN_TOKEN:
        out->join_token = xstrdup(v);
        return true;
    case AGENT_SET_AZ:
        out->az = xstrdup(v);
        return true;
    case AGENT_SET_DATA_DIR:
        if (v[0] == '\0')
            return false;
        out->data_dir = xstrdup(v);
        return true;
    case AGENT_SET_PORTS:
        return agent_settings_parse_ports(v, &out->port_min, &out->port_max);
    case AGENT_SET_ADDRESS:
        if (v[0] == '\0' || strlen(v) > 255)
            return false;
        out->address = xstrdup(v);
        return true;
    case AGENT_SET_VCPUS:
        out->vcpus = (int)n;
        return true;
    case AGENT_SET_MEMORY_MIB:
        out->memory_mib = n;
        return true;
    case AGENT_SET_NAME:
        out->name = xstrdup(v);
        return true;
    case AGENT_SET_ENGINE_USER:
        if (v[0] == '\0')
            return false;
        out->engine_user = xstrdup(v);
        return true;
    case AGENT_SET_LOG_LEVEL:
        return log_parse_level(v, &out->log_level) == 0;
    case AGENT_SET_METRICS_INTERVAL:
        out->metrics_interval_s = (int)n;
        return true;
    case AGENT_SET_METRICS_PERIOD:
        out->metrics_period_s = (int)n;
        return true;
    default:
        return false;
    }
}

/* Check and copy one resolved value into out; false with a message. The
 * table's checks (an integer's range, a label's length) come first. */
static bool apply(struct agent_settings *out, int id, const char *v, char *err, size_t errsize)
{
    const struct setting *s = &settings[id];
    long n = 0;

    if (s->hint == NULL && !parse_long(v, s->min, s->max, &n)) {
        snprintf(err, errsize, "%s: expected %san integer from %ld to %ld, got '%s'", s->name,
                 s->seconds ? "seconds, " : "", s->min, s->max, v);
        return false;
    }
    if ((s->label_max > 0 && !valid_label(v, s->label_max)) || !store(out, id, v, n)) {
        snprintf(err, errsize, "%s: expected %s, got '%s'", s->name, s->hint, v);
        return false;
    }
    return true;
}

bool agent_settings_resolve(struct agent_settings *out, const struct agent_settings_layer *layers,
                            size_t n_layers, const struct agent_machine *machine, char *err,
                            size_t errsize)
{
    char vcpus[16], memory[24];
    /* The defaults the machine gives; the others are the table's. */
    const char *machine_defaults[AGENT_SET_COUNT] = {
        [AGENT_SET_VCPUS] = vcpus,
        [AGENT_SET_MEMORY_MIB] = memory,
        [AGENT_SET_NAME] = machine->hostname[0] ? machine->hostname : NULL,
    };

    memset(out, 0, sizeof(*out));
    snprintf(vcpus, sizeof(vcpus), "%d", machine->vcpus);
    snprintf(memory, sizeof(memory), "%ld", machine->memory_mib);
    for (int id = 0; id < AGENT_SET_COUNT; id++) {
        if (settings[id].required && pick(layers, n_layers, id) == NULL) {
            snprintf(err, errsize, "%s is required (flag --%s, variable %s or the config file)",
                     settings[id].name, settings[id].name, settings[id].env);
            return false;
        }
    }
    for (int id = 0; id < AGENT_SET_COUNT; id++) {
        if (id == AGENT_SET_ENGINE_PATH)
            continue;
        const char *v = pick(layers, n_layers, id);
        if (v == NULL)
            v = settings[id].fallback != NULL ? settings[id].fallback : machine_defaults[id];
        if (v == NULL && id == AGENT_SET_NAME) {
            snprintf(err, errsize, "name: the host name is not a valid agent name; set --name");
            agent_settings_free(out);
            return false;
        }
        if (v != NULL && !apply(out, id, v, err, errsize)) {
            agent_settings_free(out);
            return false;
        }
    }
    if (out->metrics_period_s % out->metrics_interval_s != 0) {
        snprintf(err, errsize, "%s: expected a multiple of %s (%d), got '%d'",
                 settings[AGENT_SET_METRICS_PERIOD].name, settings[AGENT_SET_METRICS_INTERVAL].name,
                 out->metrics_interval_s, out->metrics_period_s);
        agent_settings_free(out);
        return false;
    }
    for (size_t i = 0; i < n_layers; i++) {
        if (layers[i].n_engine_paths == 0)
            continue;
        for (size_t j = 0; j < layers[i].n_engine_paths; j++)
            out->engine_paths[j] = xstrdup(layers[i].engine_paths[j]);
        out->n_engine_paths = layers[i].n_engine_paths;
        break;
    }
    return true;
}

/* MemTotal from /proc/meminfo in MiB, or 0. */
static long meminfo_total_mib(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    long kib = 0;

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "MemTotal: %ld kB", &kib) == 1)
            break;
    }
    fclose(f);
    return kib / 1024;
}

void agent_settings_machine(struct agent_machine *machine)
{
    char host[256];
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    memset(machine, 0, sizeof(*machine));
    machine->vcpus = n > 0 ? (int)(n > 1024 ? 1024 : n) : 1;
    machine->memory_mib = meminfo_total_mib();
    if (machine->memory_mib < 64)
        machine->memory_mib = 64;
    if (gethostname(host, sizeof(host)) == 0) {
        host[sizeof(host) - 1] = '\0';
        host[strcspn(host, ".")] = '\0'; /* the short name */
        if (valid_label(host, sizeof(machine->hostname) - 1))
            strcpy(machine->hostname, host);
    }
}

void agent_settings_layer_free(struct agent_settings_layer *layer)
{
    for (int i = 0; i < AGENT_SET_COUNT; i++)
        free(layer->value[i]);
    for (size_t i = 0; i < layer->n_engine_paths; i++)
        free(layer->engine_paths[i]);
    memset(layer, 0, sizeof(*layer));
}

void agent_settings_free(struct agent_settings *s)
{
    free(s->control_plane);
    free(s->bootstrap_token);
    free(s->join_token);
    free(s->control_plane_ca);
    free(s->engine_user);
    free(s->az);
    free(s->data_dir);
    free(s->address);
    free(s->name);
    for (size_t i = 0; i < s->n_engine_paths; i++)
        free(s->engine_paths[i]);
    memset(s, 0, sizeof(*s));
}

struct option *agent_settings_options(const struct option *extra, size_t n)
{
    struct option *o = xcalloc(AGENT_SET_COUNT + n + 1, sizeof(*o));

    for (int i = 0; i < AGENT_SET_COUNT; i++)
        o[i] = (struct option){settings[i].name, required_argument, NULL, 0};
    memcpy(o + AGENT_SET_COUNT, extra, n * sizeof(*extra));
    return o;
}

void agent_settings_usage(struct usage *u, enum agent_settings_usage what)
{
    for (int i = 0; i < AGENT_SET_COUNT; i++) {
        const struct setting *s = &settings[i];
        switch (what) {
        case AGENT_USAGE_FLAGS:
            usage_word(u, s->required ? "--%s %s" : "[--%s %s]%s", s->name, s->metavar,
                       i == AGENT_SET_ENGINE_PATH ? "..." : "");
            break;
        case AGENT_USAGE_VARIABLES:
            usage_word(u, "%s%s,", s->env, i == AGENT_SET_ENGINE_PATH ? " (colon-separated)" : "");
            break;
        case AGENT_USAGE_DEFAULTS:
            if (s->fallback != NULL)
                usage_word(u, "%s %s,", s->name, s->fallback);
            break;
        }
    }
}
