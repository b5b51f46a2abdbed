/* test_form.c -- form-urlencoded bodies (lib/form.h) and the XML the Query
 * protocol answers with (lib/xmlw.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "form.h"
#include "xmlw.h"

static void test_a_query_request(void **state)
{
    static const char body[] = "Action=CreateReplicationGroup&Version=2015-02-02&"
                               "ReplicationGroupDescription=checkout+cache%21&"
                               "Tags.member.1.Key=team&Tags.member.1.Value=check%2Bout&"
                               "Tags.member.2.Key=owner&Tags.member.2.Value=&"
                               "Tags.member.4.Key=skipped&Flag&Empty=";
    struct form f;
    char err[128];
    (void)state;
    assert_true(form_parse(body, strlen(body), &f, err, sizeof(err)));
    assert_string_equal(form_get(&f, "Action"), "CreateReplicationGroup");
    assert_string_equal(form_get(&f, "ReplicationGroupDescription"), "checkout cache!");
    assert_string_equal(form_get(&f, "Flag"), "");
    assert_string_equal(form_get(&f, "Empty"), "");
    assert_null(form_get(&f, "action"));
    assert_int_equal(form_count(&f, "Tags.member", "Key"), 2);
    assert_string_equal(form_item(&f, "Tags.member", 1, "Value"), "check+out");
    assert_string_equal(form_item(&f, "Tags.member", 2, "Value"), "");
    assert_null(form_item(&f, "Tags.member", 3, "Key"));
    assert_int_equal(form_count(&f, "Nothing", NULL), 0);
    form_free(&f);

    /* Empty bodies and empty fields ("a=1&&b=2&") are fine. */
    assert_true(form_parse("", 0, &f, err, sizeof(err)));
    assert_int_equal(f.count, 0);
    form_free(&f);
    assert_true(form_parse("a=1&&b=2&", 9, &f, err, sizeof(err)));
    assert_int_equal(f.count, 2);
    form_free(&f);
}

static void test_refusals(void **state)
{
    static const char *const bad[] = {
        "Action=%zz", "Action=%4", "Action=%", "A%00=1",   "Action=a%00b",
        "=value",     "a=1&a=2",   "a=%ff%fe", "%c0%af=1", "a=%ed%a0%80",
    };
    struct form f;
    char err[128];
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_false(form_parse(bad[i], strlen(bad[i]), &f, err, sizeof(err)));
        assert_true(err[0] != '\0');
        form_free(&f);
    }
    /* A raw NUL in the body is refused too. */
    assert_false(form_parse("a=1\0b", 5, &f, err, sizeof(err)));
    form_free(&f);
    /* Too many fields. */
    size_t n = (FORM_MAX_FIELDS + 1) * 8;
    char *many = malloc(n + 1), *p = many;
    for (int i = 0; i <= FORM_MAX_FIELDS; i++)
        p += snprintf(p, 9, "f%04d=1&", i);
    assert_false(form_parse(many, (size_t)(p - many), &f, err, sizeof(err)));
    form_free(&f);
    free(many);
}

static char *xml(const char *text)
{
    struct strbuf b;
    strbuf_init(&b, 16);
    xmlw_elem(&b, "Message", text);
    return b.p;
}

static void test_xml_text(void **state)
{
    (void)state;
    char *s = xml("a<b>&\"c\"'d'");
    assert_string_equal(s, "<Message>a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;</Message>");
    free(s);
    s = xml("caf\xc3\xa9 \xe2\x82\xac");
    assert_string_equal(s, "<Message>caf\xc3\xa9 \xe2\x82\xac</Message>");
    free(s);
    /* What XML cannot carry becomes U+FFFD: a control character, a byte
     * that is not UTF-8, U+FFFF. */
    s = xml("a\x01"
            "b\xff"
            "c\xef\xbf\xbf\td");
    assert_string_equal(s, "<Message>a\xef\xbf\xbd"
                           "b\xef\xbf\xbd"
                           "c\xef\xbf\xbd\td</Message>");
    free(s);
    struct strbuf b;
    strbuf_init(&b, 16);
    xmlw_elem(&b, "Absent", NULL);
    assert_string_equal(b.p, "");
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_query_request),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_xml_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
