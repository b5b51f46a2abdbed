/* form.h -- an application/x-www-form-urlencoded body, as the AWS Query
 * protocol sends one: "Action=CreateReplicationGroup&Version=2015-02-02&
 * Tags.member.1.Key=team&...". Parsed strictly, since it comes from
 * outside: "+" is a space and %XX a byte, and a bad escape, a NUL, bytes
 * that are not UTF-8, an empty or repeated name, or more than FORM_MAX_FIELDS
 * fields refuse the whole body, with the reason. */
#ifndef CAIRN_FORM_H
#define CAIRN_FORM_H

#include <stdbool.h>
#include <stddef.h>

#define FORM_MAX_FIELDS 1000

struct form_field {
    char *name, *value; /* decoded, NUL-terminated */
};

struct form {
    struct form_field *fields; /* in the order sent */
    size_t count;
};

/* Parse len bytes of body into f (form_free() it, also after a failure).
 * False with err filled when the body is refused. */
bool form_parse(const char *body, size_t len, struct form *f, char *err, size_t errsize);

/* The value of the field named name, or NULL. */
const char *form_get(const struct form *f, const char *name);

/* The value of "<prefix>.<n>" or, with suffix, "<prefix>.<n>.<suffix>":
 * the Query protocol's lists count n from 1 ("SecurityGroupIds.
 * SecurityGroupId.1", "Tags.member.2.Value"). NULL past the end. */
const char *form_item(const struct form *f, const char *prefix, size_t n, const char *suffix);

/* How many items "<prefix>.<n>[.<suffix>]" the list has: n counts up from
 * 1 while each is there. */
size_t form_count(const struct form *f, const char *prefix, const char *suffix);

void form_free(struct form *f);

#endif
