/* jspec.h -- request bodies checked against declared field specs.
 *
 * A body's shape is written once, as data:
 *
 *     static const struct jspec_field token_fields[] = {
 *         {.name = "name", .type = JSPEC_STRING, .required = true, .max_len = 64},
 *         {.name = "scope", .type = JSPEC_STRING, .required = true, .one_of = scopes},
 *         {0},
 *     };
 *
 * jspec_check() walks the JSON against it and reports every failure, each as
 * {"field": "a.b[2].c", "message": "..."}, so a 400 reply names them all at
 * once. Unknown fields are failures too. */
#ifndef CAIRN_JSPEC_H
#define CAIRN_JSPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum jspec_type {
    JSPEC_STRING,
    JSPEC_INTEGER,
    JSPEC_NUMBER,
    JSPEC_BOOLEAN,
    JSPEC_OBJECT,
    JSPEC_ARRAY,
};

/* A field named JSPEC_OTHER accepts every field the list does not name,
 * unchecked: for bodies checked elsewhere (a JSON merge patch, say). */
#define JSPEC_OTHER "*"

struct jspec_field {
    const char *name; /* NULL terminates a field list */
    enum jspec_type type;
    bool required;
    bool nullable;  /* JSON null accepted in place of a value */
    size_t min_len; /* string length in bytes, or array items */
    size_t max_len; /* 0: no upper limit */
    bool has_range; /* numbers: min/max below apply */
    double min, max;
    const char *const *one_of; /* strings: NULL-terminated allowed values */
    /* Extra rule for a value already of the right type: return false and
     * write a message (e.g. "may contain only letters, digits, '.', '_' and
     * '-'") to reject it. */
    bool (*check)(const json_t *value, char *msg, size_t msgsize);
    const struct jspec_field *fields; /* objects: their fields */
    const struct jspec_field *items;  /* arrays: the spec of every element */
};

/* Check that body is an object matching fields, appending one
 * {"field", "message"} object to errors (a JSON array, owned by the caller)
 * for every failure. Returns true when there were none. */
bool jspec_check(const json_t *body, const struct jspec_field *fields, json_t *errors);

/* Write "must be one of: a, b, c" for the NULL-terminated values. */
void jspec_one_of_message(const char *const *values, char *msg, size_t msgsize);

/* Append {"field": field, "message": message} to errors. */
void jspec_error(json_t *errors, const char *field, const char *message);

#endif
