/* test_usage.c -- help text wrapped into lines (lib/usage.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "usage.h"

static void forty_flags(struct usage *u)
{
    for (int i = 0; i < 40; i++)
        usage_word(u, "[--flag%02d]", i);
}

static void a_sentence(struct usage *u)
{
    usage_text(u, "address 127.0.0.1,  level info. ");
}

/* What fill appends to a line begun with first, as a string (free it). */
static char *laid_out(const char *first, int indent, void (*fill)(struct usage *))
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    struct usage u;

    usage_start(&u, out, first, indent);
    fill(&u);
    usage_end(&u);
    fclose(out);
    return text;
}

/* Words fill a line up to USAGE_WIDTH columns, then wrap to the indent. */
static void test_wrapping(void **state)
{
    char *text = laid_out("usage: tool", 6, forty_flags);
    int lines = 0;

    (void)state;
    assert_true(strncmp(text, "usage: tool [--flag00] [--flag01]", 33) == 0);
    for (char *line = text, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1, lines++) {
        int len = (int)(nl - line);
        if (len > USAGE_WIDTH)
            fail_msg("line %d is %d columns: %.*s", lines + 1, len, len, line);
        if (lines > 0 && strncmp(line, "      [--flag", 13) != 0)
            fail_msg("line %d does not start at the indent: %.*s", lines + 1, len, line);
        /* Full: the next word would not have fitted. */
        if (nl[1] != '\0' && len + 1 + 10 <= USAGE_WIDTH)
            fail_msg("line %d wrapped early at %d columns", lines + 1, len);
    }
    assert_true(lines > 1);
    free(text);
}

/* usage_text() appends each word of a sentence; runs of spaces count once. */
static void test_text(void **state)
{
    char *text = laid_out("Defaults:", 0, a_sentence);

    (void)state;
    assert_string_equal(text, "Defaults: address 127.0.0.1, level info.\n");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrapping),
        cmocka_unit_test(test_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
