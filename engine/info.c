/* info.c -- INFO text split into sections and key:value entries, indexed by key. */
#include "info.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xalloc.h"

struct engine_info {
    char *text;                        /* our copy, cut into NUL-terminated keys and values */
    struct engine_info_entry *entries; /* every entry, in reply order */
    size_t *entry_section;             /* entry i lies in sections[entry_section[i]] */
    size_t nentries;
    struct engine_info_section *sections;
    size_t nsections;
    size_t *slots; /* open addressing on key hash: entry index + 1, 0 for empty */
    size_t mask;   /* slot count - 1; the count is a power of two */
    size_t skipped;
};

/* FNV-1a: short keys, no adversary (the engine writes them). */
static size_t hash_key(const char *key)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return (size_t)h;
}

static size_t count_lines(const char *text, size_t len)
{
    size_t n = 1;
    if (len == 0)
        return n;
    for (const char *p = text; (p = memchr(p, '\n', len - (size_t)(p - text))) != NULL; p++)
        n++;
    return n;
}

static void add_section(struct engine_info *info, const char *name)
{
    struct engine_info_section *s = &info->sections[info->nsections++];
    s->name = name;
    /* entries has its final capacity already, so this pointer stays valid. */
    s->entries = info->entries + info->nentries;
    s->count = 0;
}

/* Handle one line, already NUL-terminated at its end and stripped of CR. */
static void parse_line(struct engine_info *info, char *line, size_t len)
{
    if (len == 0)
        return;
    if (line[0] == '#') {
        char *name = line + 1, *end = line + len;
        while (*name == ' ' || *name == '\t')
            name++;
        while (end > name && (end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        add_section(info, name);
        return;
    }
    char *colon = memchr(line, ':', len);
    if (colon == NULL || colon == line) {
        info->skipped++;
        return;
    }
    *colon = '\0';
    if (info->nsections == 0)
        add_section(info, "");
    info->entries[info->nentries] = (struct engine_info_entry){.key = line, .value = colon + 1};
    info->entry_section[info->nentries] = info->nsections - 1;
    info->nentries++;
    info->sections[info->nsections - 1].count++;
}

static void build_index(struct engine_info *info)
{
    size_t size = 8;
    while (size < 2 * info->nentries)
        size *= 2;
    info->slots = xcalloc(size, sizeof(*info->slots));
    info->mask = size - 1;
    for (size_t i = 0; i < info->nentries; i++) {
        size_t h = hash_key(info->entries[i].key) & info->mask;
        while (info->slots[h] != 0)
            h = (h + 1) & info->mask;
        info->slots[h] = i + 1;
    }
}

struct engine_info *engine_info_parse(const char *text, size_t len)
{
    struct engine_info *info = xcalloc(1, sizeof(*info));
    size_t lines = count_lines(text, len);

    info->text = xmalloc(len + 1);
    if (len > 0)
        memcpy(info->text, text, len);
    info->text[len] = '\0';
    info->entries = xcalloc(lines, sizeof(*info->entries));
    info->entry_section = xcalloc(lines, sizeof(*info->entry_section));
    info->sections = xcalloc(lines, sizeof(*info->sections));

    char *p = info->text, *end = info->text + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *stop = nl != NULL ? nl : end;
        char *next = nl != NULL ? nl + 1 : end;
        while (stop > p && stop[-1] == '\r')
            stop--;
        *stop = '\0';
        parse_line(info, p, (size_t)(stop - p));
        p = next;
    }
    build_index(info);
    return info;
}

void engine_info_free(struct engine_info *info)
{
    if (info == NULL)
        return;
    free(info->slots);
    free(info->sections);
    free(info->entry_section);
    free(info->entries);
    free(info->text);
    free(info);
}

const struct engine_info_section *engine_info_sections(const struct engine_info *info,
                                                       size_t *count)
{
    *count = info->nsections;
    return info->sections;
}

const struct engine_info_section *engine_info_section(const struct engine_info *info,
                                                      const char *name)
{
    for (size_t i = 0; i < info->nsections; i++) {
        if (strcasecmp(info->sections[i].name, name) == 0)
            return &info->sections[i];
    }
    return NULL;
}

size_t engine_info_skipped(const struct engine_info *info)
{
    return info->skipped;
}

const char *engine_info_get(const struct engine_info *info, const char *section, const char *key)
{
    /* Equal keys were inserted in reply order along one probe sequence, so
     * the first match found is the first in the reply. */
    for (size_t h = hash_key(key) & info->mask; info->slots[h] != 0; h = (h + 1) & info->mask) {
        size_t i = info->slots[h] - 1;
        if (strcmp(info->entries[i].key, key) != 0)
            continue;
        if (section == NULL ||
            strcasecmp(info->sections[info->entry_section[i]].name, section) == 0)
            return info->entries[i].value;
    }
    return NULL;
}

/* Copy the n bytes at s into buf as a NUL-terminated string, if n is 1 or
 * more, they fit with the NUL in bufsize, and each comes from set (which
 * keeps out what strtoll() or strtod() would take beyond a plain number). */
static bool span_copy(const char *s, size_t n, const char *set, char *buf, size_t bufsize)
{
    if (n == 0 || n >= bufsize)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\0' || strchr(set, s[i]) == NULL)
            return false;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    return true;
}

bool engine_info_span_ll(const char *s, size_t n, long long *out)
{
    char buf[32];
    char *end;

    if (!span_copy(s, n, "+-0123456789", buf, sizeof(buf)))
        return false;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno != 0 || end != buf + n)
        return false;
    *out = v;
    return true;
}

bool engine_info_span_double(const char *s, size_t n, double *out)
{
    char buf[64];
    char *end;

    /* The character set keeps out "nan", "inf" and the hexadecimal forms
     * that strtod() would also take. */
    if (!span_copy(s, n, "+-.0123456789eE", buf, sizeof(buf)))
        return false;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno != 0 || end != buf + n)
        return false;
    *out = v;
    return true;
}

bool engine_info_get_ll(const struct engine_info *info, const char *section, const char *key,
                        long long *out)
{
    const char *v = engine_info_get(info, section, key);
    return v != NULL && engine_info_span_ll(v, strlen(v), out);
}

bool engine_info_get_double(const struct engine_info *info, const char *section, const char *key,
                            double *out)
{
    const char *v = engine_info_get(info, section, key);
    return v != NULL && engine_info_span_double(v, strlen(v), out);
}

/* Locate sub-field name in "k1=v1,k2=v2": its value starts at *start and is
 * *len bytes long (not NUL-terminated). */
static bool field_span(const char *value, const char *name, const char **start, size_t *len)
{
    size_t nlen;

    if (value == NULL || name == NULL || (nlen = strlen(name)) == 0)
        return false;
    for (const char *p = value;;) {
        size_t item = strcspn(p, ",");
        if (item > nlen && memcmp(p, name, nlen) == 0 && p[nlen] == '=') {
            *start = p + nlen + 1;
            *len = item - nlen - 1;
            return true;
        }
        if (p[item] == '\0')
            return false;
        p += item + 1;
    }
}

bool engine_info_field(const char *value, const char *name, char *out, size_t outsize)
{
    const char *start;
    size_t len;

    if (outsize > 0)
        out[0] = '\0';
    if (!field_span(value, name, &start, &len) || len >= outsize)
        return false;
    memcpy(out, start, len);
    out[len] = '\0';
    return true;
}

bool engine_info_field_ll(const char *value, const char *name, long long *out)
{
    const char *start;
    size_t len;
    return field_span(value, name, &start, &len) && engine_info_span_ll(start, len, out);
}

bool engine_info_field_double(const char *value, const char *name, double *out)
{
    const char *start;
    size_t len;
    return field_span(value, name, &start, &len) && engine_info_span_double(start, len, out);
}
