/* cluster_spec.c -- the cluster spec: its field checks, the rules between
 * fields, defaults, merge patches and diffs, and the slot split. */
#include "cluster_spec.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "catalog.h"
#include "engine_config.h"
#include "xalloc.h"

/* ---- Checks of single fields ------------------------------------------- */

bool cspec_check_id(const json_t *value, char *msg, size_t msgsize)
{
    const char *s = json_string_value(value);
    size_t n = json_string_length(value);

    if (n == 0)
        return true; /* min_len reports it */
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-')) {
            snprintf(msg, msgsize, "may contain only lowercase letters, digits and '-'");
            return false;
        }
    }
    if (s[0] < 'a' || s[0] > 'z')
        snprintf(msg, msgsize, "must start with a lowercase letter");
    else if (strstr(s, "--") != NULL)
        snprintf(msg, msgsize, "must not contain \"--\"");
    else if (s[n - 1] == '-')
        snprintf(msg, msgsize, "must not end with '-'");
    else
        return true;
    return false;
}

static bool check_line(const json_t *value, char *msg, size_t msgsize)
{
    if (engine_line_parse(json_string_value(value), NULL, NULL))
        return true;
    snprintf(msg, msgsize, "must be a major.minor version such as 8.0");
    return false;
}

static bool check_window(const json_t *value, char *msg, size_t msgsize)
{
    int start, end;
    return cspec_window_parse(json_string_value(value), &start, &end, msg, msgsize);
}

static bool check_daily_window(const json_t *value, char *msg, size_t msgsize)
{
    int start, end;
    return cspec_daily_window_parse(json_string_value(value), &start, &end, msg, msgsize);
}

static const struct jspec_field restore_fields[] = {
    {.name = "snapshot_id", .type = JSPEC_STRING, .required = true, .min_len = 1, .max_len = 64},
    {0},
};

static bool check_auth_token(const json_t *value, char *msg, size_t msgsize)
{
    const char *s = json_string_value(value);
    size_t n = json_string_length(value);

    for (size_t i = 0; i < n; i++) {
        if (s[i] <= ' ' || s[i] > '~') {
            snprintf(msg, msgsize, "may contain only printable ASCII characters other than space");
            return false;
        }
    }
    return true;
}

static const char *const cluster_modes[] = {"enabled", "disabled", NULL};

const struct jspec_field cspec_create_spec[] = {
    {.name = "id",
     .type = JSPEC_STRING,
     .required = true,
     .min_len = 1,
     .max_len = CSPEC_ID_MAX,
     .check = cspec_check_id},
    {.name = "description", .type = JSPEC_STRING, .max_len = CSPEC_DESCRIPTION_MAX},
    {.name = "engine", .type = JSPEC_STRING, .required = true, .one_of = engine_kind_names},
    {.name = "engine_version", .type = JSPEC_STRING, .required = true, .check = check_line},
    {.name = "node_type",
     .type = JSPEC_STRING,
     .required = true,
     .min_len = 1,
     .max_len = CSPEC_NODE_TYPE_MAX},
    {.name = "cluster_mode", .type = JSPEC_STRING, .one_of = cluster_modes},
    {.name = "num_shards",
     .type = JSPEC_INTEGER,
     .has_range = true,
     .min = 1,
     .max = CSPEC_SHARDS_MAX},
    {.name = "replicas_per_shard",
     .type = JSPEC_INTEGER,
     .has_range = true,
     .min = 0,
     .max = CSPEC_REPLICAS_MAX},
    {.name = "automatic_failover", .type = JSPEC_BOOLEAN},
    {.name = "multi_az", .type = JSPEC_BOOLEAN},
    {.name = "transit_encryption", .type = JSPEC_BOOLEAN},
    {.name = "maintenance_window", .type = JSPEC_STRING, .check = check_window},
    {.name = "snapshot_window", .type = JSPEC_STRING, .check = check_daily_window},
    {.name = "snapshot_retention_days",
     .type = JSPEC_INTEGER,
     .has_range = true,
     .min = 0,
     .max = CSPEC_SNAPSHOT_RETENTION_MAX},
    {.name = "restore_from", .type = JSPEC_OBJECT, .fields = restore_fields},
    {.name = "parameters", .type = JSPEC_OBJECT},
    {.name = "tags", .type = JSPEC_OBJECT},
    {.name = "auth_token",
     .type = JSPEC_STRING,
     .min_len = CSPEC_AUTH_TOKEN_MIN,
     .max_len = CSPEC_AUTH_TOKEN_MAX,
     .check = check_auth_token},
    {0},
};

/* ---- Defaults ---------------------------------------------------------- */

/* The default of field in a spec whose earlier fields are filled in
 * already, or NULL for the required fields and auth_token. */
static json_t *default_value(const char *field, const json_t *spec)
{
    if (strcmp(field, "description") == 0)
        return json_string("");
    if (strcmp(field, "cluster_mode") == 0)
        return json_string("enabled");
    if (strcmp(field, "num_shards") == 0 || strcmp(field, "replicas_per_shard") == 0)
        return json_integer(1);
    if (strcmp(field, "automatic_failover") == 0) {
        const char *mode = json_string_value(json_object_get(spec, "cluster_mode"));
        bool cluster = mode != NULL && strcmp(mode, "enabled") == 0;
        return json_boolean(cluster ||
                            json_integer_value(json_object_get(spec, "replicas_per_shard")) > 0);
    }
    if (strcmp(field, "multi_az") == 0)
        return json_boolean(json_is_true(json_object_get(spec, "automatic_failover")));
    if (strcmp(field, "transit_encryption") == 0)
        return json_false();
    if (strcmp(field, "maintenance_window") == 0)
        return json_string(CSPEC_WINDOW_DEFAULT);
    if (strcmp(field, "snapshot_window") == 0)
        return json_string(CSPEC_SNAPSHOT_WINDOW_DEFAULT);
    if (strcmp(field, "snapshot_retention_days") == 0)
        return json_integer(0);
    if (strcmp(field, "parameters") == 0 || strcmp(field, "tags") == 0)
        return json_object();
    return NULL;
}

/* A copy of body's spec fields, in the spec's order, with the defaults of
 * those it lacks. */
static json_t *fill_defaults(const json_t *body)
{
    json_t *spec = json_object();

    for (const struct jspec_field *f = cspec_create_spec; f->name != NULL; f++) {
        if (strcmp(f->name, "auth_token") == 0)
            continue;
        const json_t *given = json_object_get(body, f->name);
        json_t *value = given != NULL ? json_deep_copy(given) : default_value(f->name, spec);
        if (value != NULL)
            json_object_set_new(spec, f->name, value);
    }
    return spec;
}

/* ---- Rules between fields ---------------------------------------------- */

/* The fields that failed their own checks: errors[from..] as a set of
 * field names (an object whose keys are the names). A rule reading one of
 * them is skipped, so one mistake is reported once. */
static json_t *failed_fields(const json_t *errors, size_t from)
{
    json_t *failed = json_object();

    for (size_t i = from; i < json_array_size(errors); i++) {
        const char *f = json_string_value(json_object_get(json_array_get(errors, i), "field"));
        json_object_set_new(failed, f, json_true());
    }
    return failed;
}

/* Whether none of the NULL-terminated fields is in failed. */
static bool all_valid(const json_t *failed, const char *const *fields)
{
    for (; *fields != NULL; fields++) {
        if (json_object_get(failed, *fields) != NULL)
            return false;
    }
    return true;
}

static bool is_cluster_mode(const json_t *spec)
{
    return strcmp(json_string_value(json_object_get(spec, "cluster_mode")), "enabled") == 0;
}

/* Shards, replicas and the failover flags. */
static void check_topology(const json_t *spec, const json_t *failed, json_t *errors)
{
    static const char *const shards_in[] = {"cluster_mode", "num_shards", NULL};
    static const char *const failover_in[] = {"cluster_mode", "replicas_per_shard",
                                              "automatic_failover", NULL};
    static const char *const multi_az_in[] = {"automatic_failover", "multi_az", NULL};
    bool failover = json_is_true(json_object_get(spec, "automatic_failover"));

    if (all_valid(failed, shards_in) && !is_cluster_mode(spec) &&
        json_integer_value(json_object_get(spec, "num_shards")) != 1)
        jspec_error(errors, "num_shards", "must be 1 when cluster_mode is disabled");
    if (all_valid(failed, failover_in)) {
        bool cluster = is_cluster_mode(spec);
        bool replicas = json_integer_value(json_object_get(spec, "replicas_per_shard")) > 0;
        if (cluster && !failover)
            jspec_error(errors, "automatic_failover", "must be true when cluster_mode is enabled");
        /* In cluster mode failover is not optional, so the replica is what
         * is missing. */
        if (cluster && !replicas)
            jspec_error(errors, "replicas_per_shard",
                        "must be at least 1 when cluster_mode is enabled (automatic_failover is "
                        "required there and needs a replica)");
        else if (failover && !replicas)
            jspec_error(errors, "automatic_failover", "needs replicas_per_shard of at least 1");
    }
    if (all_valid(failed, multi_az_in) && json_is_true(json_object_get(spec, "multi_az")) &&
        !failover)
        jspec_error(errors, "multi_az", "needs automatic_failover to be true");
}

/* ---- Parameters -------------------------------------------------------- */

/* Check one of Cairn's managed settings (engine_config.h); cluster is NULL
 * when cluster_mode is unknown (it failed its own check). */
static void check_managed(const struct engine_config_managed *m, const char *value,
                          const bool *cluster, const char *field, json_t *errors)
{
    char msg[256], err[320];

    if (m->cluster_only && cluster != NULL && !*cluster) {
        snprintf(err, sizeof(err), "parameter \"%s\" applies only when cluster_mode is enabled",
                 m->param);
        jspec_error(errors, field, err);
    } else if (!engine_config_managed_check(m, value, msg, sizeof(msg))) {
        snprintf(err, sizeof(err), "parameter \"%s\" %s", m->param, msg);
        jspec_error(errors, field, err);
    }
}

static void check_parameters(const json_t *spec, const json_t *failed, json_t *errors)
{
    static const char *const engine_in[] = {"engine", "engine_version", NULL};
    json_t *params = json_object_get(spec, "parameters");
    const char *line = json_string_value(json_object_get(spec, "engine_version"));
    enum engine_kind kind = ENGINE_VALKEY;
    bool engine_known =
        all_valid(failed, engine_in) &&
        engine_kind_from_name(json_string_value(json_object_get(spec, "engine")), &kind);
    bool mode_known = json_object_get(failed, "cluster_mode") == NULL;
    bool cluster = mode_known && is_cluster_mode(spec);
    const char *name;
    json_t *value;

    if (json_object_get(failed, "parameters") != NULL)
        return;
    /* The directive each accepted parameter sets, to catch an alias and its
     * entry given together. */
    const char **directives = xcalloc(json_object_size(params) + 1, sizeof(*directives));
    const char **names = xcalloc(json_object_size(params) + 1, sizeof(*names));
    size_t n = 0;
    json_object_foreach (params, name, value) {
        char *field = xasprintf("parameters.%s", name);
        const struct engine_config_managed *managed = engine_config_managed_find(name);
        const char *directive = NULL;
        char err[512];

        if (!json_is_string(value)) {
            jspec_error(errors, field, "must be a string");
        } else if (managed != NULL) {
            check_managed(managed, json_string_value(value), mode_known ? &cluster : NULL, field,
                          errors);
        } else if (engine_known &&
                   !engine_config_param_check(kind, line, name, json_string_value(value),
                                              &directive, err, sizeof(err))) {
            jspec_error(errors, field, err);
        } else if (engine_known) {
            for (size_t i = 0; i < n; i++) {
                if (strcmp(directives[i], directive) != 0)
                    continue;
                snprintf(err, sizeof(err),
                         "parameter \"%s\" sets the same directive as \"%s\" (%s)", name, names[i],
                         directive);
                jspec_error(errors, field, err);
                break;
            }
            directives[n] = directive;
            names[n++] = name;
        }
        free(field);
    }
    free(directives);
    free(names);
}

/* ---- Tags -------------------------------------------------------------- */

/* The number of characters in n bytes of UTF-8 (jansson's strings are
 * valid UTF-8): the bytes that do not continue a sequence. */
static size_t utf8_chars(const char *s, size_t n)
{
    size_t chars = 0;

    for (size_t i = 0; i < n; i++)
        chars += ((unsigned char)s[i] & 0xc0) != 0x80;
    return chars;
}

static void check_tags(const json_t *spec, const json_t *failed, json_t *errors)
{
    json_t *tags = json_object_get(spec, "tags");
    const char *key;
    json_t *value;
    char msg[128];

    if (json_object_get(failed, "tags") != NULL)
        return;
    if (json_object_size(tags) > CSPEC_TAGS_MAX) {
        snprintf(msg, sizeof(msg), "must have at most %d tags", CSPEC_TAGS_MAX);
        jspec_error(errors, "tags", msg);
    }
    json_object_foreach (tags, key, value) {
        char *field = xasprintf("tags.%s", key);
        size_t chars = utf8_chars(key, strlen(key));

        if (chars == 0 || chars > CSPEC_TAG_KEY_MAX) {
            snprintf(msg, sizeof(msg), "key must have 1 to %d characters", CSPEC_TAG_KEY_MAX);
            jspec_error(errors, field, msg);
        }
        if (!json_is_string(value)) {
            jspec_error(errors, field, "must be a string");
        } else if (utf8_chars(json_string_value(value), json_string_length(value)) >
                   CSPEC_TAG_VALUE_MAX) {
            snprintf(msg, sizeof(msg), "must have at most %d characters", CSPEC_TAG_VALUE_MAX);
            jspec_error(errors, field, msg);
        }
        free(field);
    }
}

/* ---- The spec ---------------------------------------------------------- */

json_t *cspec_normalize(const json_t *body, json_t *errors)
{
    size_t from = json_array_size(errors);

    if (!jspec_check(body, cspec_create_spec, errors) && !json_is_object(body))
        return NULL;
    json_t *spec = fill_defaults(body);
    json_t *failed = failed_fields(errors, from);
    check_topology(spec, failed, errors);
    check_parameters(spec, failed, errors);
    check_tags(spec, failed, errors);
    json_decref(failed);
    if (json_array_size(errors) > from) {
        json_decref(spec);
        return NULL;
    }
    return spec;
}

bool cspec_auth_token_check(const json_t *value, char *msg, size_t msgsize)
{
    size_t n = json_string_length(value);

    if (!json_is_string(value) || n < CSPEC_AUTH_TOKEN_MIN || n > CSPEC_AUTH_TOKEN_MAX) {
        snprintf(msg, msgsize, "must be a string of %d to %d characters", CSPEC_AUTH_TOKEN_MIN,
                 CSPEC_AUTH_TOKEN_MAX);
        return false;
    }
    return check_auth_token(value, msg, msgsize);
}

const char *cspec_auth_token(const json_t *body)
{
    return json_string_value(json_object_get(body, "auth_token"));
}

json_t *cspec_merge_patch(const json_t *target, const json_t *patch)
{
    const char *key;
    json_t *value;

    if (!json_is_object(patch))
        return json_deep_copy(patch);
    json_t *out = json_is_object(target) ? json_deep_copy(target) : json_object();
    json_object_foreach ((json_t *)patch, key, value) {
        if (json_is_null(value))
            json_object_del(out, key);
        else
            json_object_set_new(out, key, cspec_merge_patch(json_object_get(out, key), value));
    }
    return out;
}

bool cspec_diff(const json_t *before, const json_t *after, json_t *changed_fields)
{
    size_t n = json_array_size(changed_fields);
    const char *key;
    json_t *value;

    json_object_foreach ((json_t *)before, key, value) {
        if (!json_equal(value, json_object_get(after, key)))
            json_array_append_new(changed_fields, json_string(key));
    }
    json_object_foreach ((json_t *)after, key, value) {
        if (json_object_get(before, key) == NULL)
            json_array_append_new(changed_fields, json_string(key));
    }
    return json_array_size(changed_fields) > n;
}

/* ---- Slots ------------------------------------------------------------- */

/* The first slot of shard k of shards (k == shards: one past the last):
 * round(k * CSPEC_SLOTS / shards), halves up, in integers. */
static int slot_boundary(int shards, int k)
{
    return (int)((2L * k * CSPEC_SLOTS + shards) / (2L * shards));
}

void cspec_split_slots(int shards, int shard, int *first, int *last)
{
    assert(shards >= 1 && shards <= CSPEC_SLOTS && shard >= 0 && shard < shards);
    *first = slot_boundary(shards, shard);
    *last = slot_boundary(shards, shard + 1) - 1;
}

/* ---- Maintenance windows ----------------------------------------------- */

static const char *const days[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

static bool two_digits(const char *s, int max, int *out)
{
    if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
        return false;
    *out = (s[0] - '0') * 10 + (s[1] - '0');
    return *out <= max;
}

/* Parse "ddd:hh24:mi" at s (the shape checked already) into a minute of
 * the week. */
static bool parse_point(const char *s, int *minute, char *msg, size_t msgsize)
{
    int day = 0, hour, min;

    while (day < 7 && strncmp(s, days[day], 3) != 0)
        day++;
    if (day == 7) {
        snprintf(msg, msgsize,
                 "has an unknown day \"%.3s\" (days are mon, tue, wed, thu, fri, "
                 "sat, sun)",
                 s);
        return false;
    }
    if (!two_digits(s + 4, 23, &hour) || !two_digits(s + 7, 59, &min)) {
        snprintf(msg, msgsize, "has an invalid time \"%.5s\" (hours are 00-23, minutes 00-59)",
                 s + 4);
        return false;
    }
    *minute = day * 24 * 60 + hour * 60 + min;
    return true;
}

bool cspec_window_parse(const char *text, int *start, int *end, char *msg, size_t msgsize)
{
    int s, e;

    if (strlen(text) != 19 || text[3] != ':' || text[6] != ':' || text[9] != '-' ||
        text[13] != ':' || text[16] != ':') {
        snprintf(msg, msgsize,
                 "must have the form ddd:hh24:mi-ddd:hh24:mi (UTC), e.g. " CSPEC_WINDOW_DEFAULT);
        return false;
    }
    if (!parse_point(text, &s, msg, msgsize) || !parse_point(text + 10, &e, msg, msgsize))
        return false;
    int length = (e - s + CSPEC_MINUTES_PER_WEEK) % CSPEC_MINUTES_PER_WEEK;
    if (length < CSPEC_WINDOW_MIN_MINUTES) {
        snprintf(msg, msgsize, "must be at least %d minutes long, not %d", CSPEC_WINDOW_MIN_MINUTES,
                 length);
        return false;
    }
    if (length > CSPEC_WINDOW_MAX_MINUTES) {
        snprintf(msg, msgsize, "must be at most 24 hours long, not %d minutes", length);
        return false;
    }
    *start = s;
    *end = e;
    return true;
}

bool cspec_daily_window_parse(const char *text, int *start, int *end, char *msg, size_t msgsize)
{
    int sh, sm, eh, em;

    if (strlen(text) != 11 || text[2] != ':' || text[5] != '-' || text[8] != ':') {
        snprintf(msg, msgsize,
                 "must have the form hh24:mi-hh24:mi (UTC), e.g. " CSPEC_SNAPSHOT_WINDOW_DEFAULT);
        return false;
    }
    if (!two_digits(text, 23, &sh) || !two_digits(text + 3, 59, &sm) ||
        !two_digits(text + 6, 23, &eh) || !two_digits(text + 9, 59, &em)) {
        snprintf(msg, msgsize, "has an invalid time (hours are 00-23, minutes 00-59)");
        return false;
    }
    int s = sh * 60 + sm, e = eh * 60 + em;
    int length = (e - s + 1440) % 1440;
    if (length == 0)
        length = 1440;
    if (length < CSPEC_WINDOW_MIN_MINUTES) {
        snprintf(msg, msgsize, "must be at least %d minutes long, not %d", CSPEC_WINDOW_MIN_MINUTES,
                 length);
        return false;
    }
    *start = s;
    *end = e;
    return true;
}

long long cspec_daily_window_opened(int start, int end, long long now)
{
    long long minute = now % 86400 / 60;
    int length = ((end - start) % 1440 + 1440) % 1440;
    long long into = ((minute - start) % 1440 + 1440) % 1440;

    if (length == 0)
        length = 1440;
    if (into >= length)
        return -1;
    return now - now % 60 - into * 60;
}

long long cspec_window_next_open(int start, int end, long long now)
{
    const int week = CSPEC_MINUTES_PER_WEEK;
    long long day = now / 86400, minute_of_day = now % 86400 / 60;
    /* 1970-01-01 was a Thursday: day 3 of a week that starts on Monday. */
    int minute = (int)((day + 3) % 7 * 1440 + minute_of_day);
    int into = ((minute - start) % week + week) % week;
    int length = ((end - start) % week + week) % week;

    if (into < length)
        return now;
    return now - now % 60 + (long long)(week - into) * 60;
}

const struct jspec_field cspec_any_object[] = {
    {.name = JSPEC_OTHER},
    {0},
};
