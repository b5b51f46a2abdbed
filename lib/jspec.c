/* jspec.c -- validation of JSON values against declared field specs. */
#include "jspec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "xalloc.h"

static void check_value(const json_t *value, const struct jspec_field *spec, const char *path,
                        json_t *errors);

void jspec_error(json_t *errors, const char *field, const char *message)
{
    json_t *f = json_string(field), *m = json_string(message);

    /* A field or message that is not UTF-8 must not make the failure vanish:
     * report it with a neutral text instead. */
    json_array_append_new(errors,
                          json_pack("{s:o, s:o}", "field", f ? f : json_string("(unprintable)"),
                                    "message", m ? m : json_string("is invalid")));
}

static const char *type_phrase(enum jspec_type type)
{
    switch (type) {
    case JSPEC_STRING:
        return "must be a string";
    case JSPEC_INTEGER:
        return "must be an integer";
    case JSPEC_NUMBER:
        return "must be a number";
    case JSPEC_BOOLEAN:
        return "must be a boolean";
    case JSPEC_OBJECT:
        return "must be an object";
    case JSPEC_ARRAY:
        return "must be an array";
    }
    return "has the wrong type";
}

static bool has_type(const json_t *value, enum jspec_type type)
{
    switch (type) {
    case JSPEC_STRING:
        return json_is_string(value);
    case JSPEC_INTEGER:
        return json_is_integer(value);
    case JSPEC_NUMBER:
        return json_is_number(value);
    case JSPEC_BOOLEAN:
        return json_is_boolean(value);
    case JSPEC_OBJECT:
        return json_is_object(value);
    case JSPEC_ARRAY:
        return json_is_array(value);
    }
    return false;
}

static void check_length(size_t len, const struct jspec_field *spec, const char *unit,
                         const char *path, json_t *errors)
{
    char msg[128];
    if (len < spec->min_len) {
        snprintf(msg, sizeof(msg), "must have at least %zu %s", spec->min_len, unit);
        jspec_error(errors, path, msg);
    } else if (spec->max_len > 0 && len > spec->max_len) {
        snprintf(msg, sizeof(msg), "must have at most %zu %s", spec->max_len, unit);
        jspec_error(errors, path, msg);
    }
}

void jspec_one_of_message(const char *const *values, char *msg, size_t msgsize)
{
    size_t o = (size_t)snprintf(msg, msgsize, "must be one of:");
    for (const char *const *v = values; *v != NULL && o < msgsize; v++)
        o += (size_t)snprintf(msg + o, msgsize - o, "%s %s", v == values ? "" : ",", *v);
}

static void check_one_of(const char *s, const struct jspec_field *spec, const char *path,
                         json_t *errors)
{
    char msg[512];

    for (const char *const *v = spec->one_of; *v != NULL; v++) {
        if (strcmp(s, *v) == 0)
            return;
    }
    jspec_one_of_message(spec->one_of, msg, sizeof(msg));
    jspec_error(errors, path, msg);
}

static void check_object(const json_t *object, const struct jspec_field *fields, const char *path,
                         json_t *errors)
{
    const char *key;
    json_t *value;
    bool open = false;

    for (const struct jspec_field *f = fields; f->name != NULL; f++) {
        if (strcmp(f->name, JSPEC_OTHER) == 0) {
            open = true;
            continue;
        }
        char *sub = path[0] ? xasprintf("%s.%s", path, f->name) : xstrdup(f->name);
        json_t *v = json_object_get(object, f->name);
        if (v == NULL) {
            if (f->required)
                jspec_error(errors, sub, "is required");
        } else {
            check_value(v, f, sub, errors);
        }
        free(sub);
    }
    json_object_foreach ((json_t *)object, key, value) {
        const struct jspec_field *f = fields;
        if (open)
            break;
        while (f->name != NULL && strcmp(f->name, key) != 0)
            f++;
        if (f->name == NULL) {
            char *sub = path[0] ? xasprintf("%s.%s", path, key) : xstrdup(key);
            jspec_error(errors, sub, "is not a known field");
            free(sub);
        }
    }
}

static void check_value(const json_t *value, const struct jspec_field *spec, const char *path,
                        json_t *errors)
{
    char msg[256];

    if (json_is_null(value) && spec->nullable)
        return;
    if (!has_type(value, spec->type)) {
        jspec_error(errors, path, type_phrase(spec->type));
        return;
    }
    switch (spec->type) {
    case JSPEC_STRING:
        check_length(json_string_length(value), spec, "characters", path, errors);
        if (spec->one_of != NULL)
            check_one_of(json_string_value(value), spec, path, errors);
        break;
    case JSPEC_INTEGER:
    case JSPEC_NUMBER:
        if (spec->has_range) {
            double d = json_number_value(value);
            if (d < spec->min || d > spec->max || isnan(d)) {
                snprintf(msg, sizeof(msg), "must be between %.15g and %.15g", spec->min, spec->max);
                jspec_error(errors, path, msg);
            }
        }
        break;
    case JSPEC_ARRAY:
        check_length(json_array_size(value), spec, "items", path, errors);
        if (spec->items != NULL) {
            size_t i;
            json_t *item;
            json_array_foreach (value, i, item) {
                char *sub = xasprintf("%s[%zu]", path, i);
                check_value(item, spec->items, sub, errors);
                free(sub);
            }
        }
        break;
    case JSPEC_OBJECT:
        if (spec->fields != NULL)
            check_object(value, spec->fields, path, errors);
        break;
    case JSPEC_BOOLEAN:
        break;
    }
    if (spec->check != NULL && !spec->check(value, msg, sizeof(msg)))
        jspec_error(errors, path, msg);
}

bool jspec_check(const json_t *body, const struct jspec_field *fields, json_t *errors)
{
    size_t before = json_array_size(errors);

    if (!json_is_object(body)) {
        jspec_error(errors, "", "the request body must be a JSON object");
        return false;
    }
    check_object(body, fields, "", errors);
    return json_array_size(errors) == before;
}
