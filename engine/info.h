/* info.h -- the text of an engine's INFO reply, parsed for typed lookup.
 *
 * INFO (and INFO everything) is a list of "# Section" headers, each followed
 * by "key:value" lines, ended by CRLF. engine_info_parse() copies the text
 * once and indexes every key, so a lookup costs the same on the ~300 lines of
 * INFO everything as on three. Some values pack sub-fields:
 *
 *     slave0:ip=127.0.0.1,port=7002,state=online,offset=123,lag=0
 *     db0:keys=10,expires=0,avg_ttl=0
 *     cmdstat_get:calls=5,usec=9,usec_per_call=1.80,rejected_calls=0,failed_calls=0
 *
 * and engine_info_field*() pick one of them out of such a value.
 *
 * Everything here is pure: no I/O, no globals. */
#ifndef CAIRN_ENGINE_INFO_H
#define CAIRN_ENGINE_INFO_H

#include <stdbool.h>
#include <stddef.h>

struct engine_info_entry {
    const char *key;   /* never empty */
    const char *value; /* may be empty ("config_file:") */
};

struct engine_info_section {
    const char *name; /* as written after "# " ("Replication"); "" for lines before any header */
    const struct engine_info_entry *entries;
    size_t count;
};

struct engine_info;

/* Parse len bytes of INFO text (LF or CRLF line ends; need not be
 * NUL-terminated). Blank lines are skipped, as are lines that are neither a
 * "#" header nor "key:value" with a non-empty key (counted, see
 * engine_info_skipped()). Never fails: empty text gives no sections. The
 * value is split at the first ':' only, so values may contain ':'. The
 * result owns a copy of the text; free it with engine_info_free(). */
struct engine_info *engine_info_parse(const char *text, size_t len);

/* Free what engine_info_parse() returned; NULL is allowed. */
void engine_info_free(struct engine_info *info);

/* The sections in reply order, *count of them. Valid until engine_info_free(). */
const struct engine_info_section *engine_info_sections(const struct engine_info *info,
                                                       size_t *count);

/* The first section called name (ASCII case-insensitive: "replication"
 * finds "# Replication"), or NULL. */
const struct engine_info_section *engine_info_section(const struct engine_info *info,
                                                      const char *name);

/* How many non-blank lines were neither a header nor key:value. */
size_t engine_info_skipped(const struct engine_info *info);

/* The value of key (case-sensitive, as the engine spells it), or NULL when
 * absent. With section non-NULL only that section (case-insensitive) is
 * searched; with NULL, the first occurrence in reply order is returned.
 * Constant time on average. The string lives until engine_info_free(). */
const char *engine_info_get(const struct engine_info *info, const char *section, const char *key);

/* Like engine_info_get(), converting the whole value to a decimal integer.
 * False, with *out untouched, when the key is absent or its value is not
 * entirely an integer in range ("1.14M", "", "12abc"). */
bool engine_info_get_ll(const struct engine_info *info, const char *section, const char *key,
                        long long *out);

/* Like engine_info_get_ll() for a floating-point value ("1.05", "0",
 * "-1"); "101.93%" and "nan" are not numbers here. */
bool engine_info_get_double(const struct engine_info *info, const char *section, const char *key,
                            double *out);

/* Find sub-field name in a "k1=v1,k2=v2,..." value and copy its value,
 * NUL-terminated, into out. False when value or name is NULL, the field is
 * absent, or its value does not fit in outsize bytes (out is then "" if
 * outsize > 0): a truncated address is worse than none. */
bool engine_info_field(const char *value, const char *name, char *out, size_t outsize);

/* engine_info_field() converted to a decimal integer, as engine_info_get_ll(). */
bool engine_info_field_ll(const char *value, const char *name, long long *out);

/* engine_info_field() converted to a double, as engine_info_get_double(). */
bool engine_info_field_double(const char *value, const char *name, double *out);

/* Convert exactly n bytes at s (NUL-terminated or not) holding a whole
 * decimal integer: optional sign, digits, nothing else, in range. The
 * number syntax of every engine parser in this library. */
bool engine_info_span_ll(const char *s, size_t n, long long *out);

/* As engine_info_span_ll() for a decimal floating-point number ("1.05",
 * "-1", "2e3"); "nan", "inf", hexadecimal and out-of-range values fail. */
bool engine_info_span_double(const char *s, size_t n, double *out);

#endif
