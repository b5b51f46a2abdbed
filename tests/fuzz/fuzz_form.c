/* fuzz_form.c -- a form-urlencoded body as the AWS Query protocol sends it
 * (lib/form.h), and each of its fields written back as XML (lib/xmlw.h).
 *
 * Promises: an accepted body's names and values are UTF-8 without NUL, no
 * name repeats, and no more than FORM_MAX_FIELDS are kept; the XML of any
 * value is UTF-8 whose only "<" and ">" are those of the element's tags
 * and whose every "&" starts an entity. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "form.h"
#include "fuzz.h"
#include "utf8.h"
#include "xmlw.h"

static void check_xml(const char *value)
{
    struct strbuf b;
    strbuf_init(&b, 64);
    xmlw_elem(&b, "V", value);
    FUZZ_ASSERT(utf8_valid(b.p, b.len));
    FUZZ_ASSERT(b.len >= 7 && strncmp(b.p, "<V>", 3) == 0 && strcmp(b.p + b.len - 4, "</V>") == 0);
    for (size_t i = 3; i + 4 < b.len; i++) {
        FUZZ_ASSERT(b.p[i] != '<' && b.p[i] != '>');
        if (b.p[i] == '&')
            FUZZ_ASSERT(strncmp(b.p + i, "&amp;", 5) == 0 || strncmp(b.p + i, "&lt;", 4) == 0 ||
                        strncmp(b.p + i, "&gt;", 4) == 0 || strncmp(b.p + i, "&quot;", 6) == 0 ||
                        strncmp(b.p + i, "&apos;", 6) == 0);
    }
    free(b.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct form f;
    char err[128];

    if (form_parse((const char *)data, size, &f, err, sizeof(err))) {
        FUZZ_ASSERT(f.count <= FORM_MAX_FIELDS);
        for (size_t i = 0; i < f.count; i++) {
            FUZZ_ASSERT(utf8_valid(f.fields[i].name, strlen(f.fields[i].name)));
            FUZZ_ASSERT(utf8_valid(f.fields[i].value, strlen(f.fields[i].value)));
            FUZZ_ASSERT(f.fields[i].name[0] != '\0');
            FUZZ_ASSERT(form_get(&f, f.fields[i].name) == f.fields[i].value);
            check_xml(f.fields[i].value);
        }
        (void)form_count(&f, "Tags.member", "Key");
    }
    form_free(&f);
    /* Whatever the bytes, their XML holds. */
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    check_xml(text);
    free(text);
    return 0;
}
