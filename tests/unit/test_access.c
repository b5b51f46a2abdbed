/* test_access.c -- the access strings of tenant users (engine/access.h):
 * what a tenant may ask for, and the first rule at fault when it asks for
 * more. The names themselves are checked against live engines
 * (tests/system/test_users.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "access.h"

static void expect_ok(const char *access)
{
    char msg[256] = "";
    if (!engine_access_check(access, msg, sizeof(msg)))
        fail_msg("refused \"%s\": %s", access, msg);
}

/* Refused, with a message that contains want. */
static void expect_refused(const char *access, const char *want)
{
    char msg[256] = "";
    if (engine_access_check(access, msg, sizeof(msg)))
        fail_msg("accepted \"%s\"", access);
    if (strstr(msg, want) == NULL)
        fail_msg("\"%s\": message \"%s\" lacks \"%s\"", access, msg, want);
}

static void test_what_tenants_write(void **state)
{
    (void)state;
    expect_ok("");
    expect_ok("on");
    expect_ok("off");
    expect_ok("on ~* &* +@all");
    expect_ok("on ~app:* +@read +@write -flushall -keys");
    expect_ok("on %R~cache:* %W~queue:* %RW~both:* +@all");
    expect_ok("ON ALLKEYS ALLCHANNELS ALLCOMMANDS");
    expect_ok("on resetkeys ~a resetchannels &news nocommands +get +client|setname");
    expect_ok("  on   ~a  +get  ");
    expect_ok("on +json.get +ft._list");
}

static void test_passwords_and_resets_are_refused(void **state)
{
    (void)state;
    expect_refused("on >secret", "never in its access string");
    expect_refused("on <secret", "never in its access string");
    expect_refused("on #0123", "never in its access string");
    expect_refused("on !0123", "never in its access string");
    expect_refused("on nopass", "always has a password");
    expect_refused("on RESETPASS", "always has a password");
    expect_refused("reset on", "reset is implied");
    expect_refused("on (~x +get)", "selectors");
    expect_refused("on clearselectors", "selectors");
}

static void test_malformed_rules_are_named(void **state)
{
    (void)state;
    expect_refused("on +", "rule \"+\"");
    expect_refused("on +@", "rule \"+@\"");
    expect_refused("on -get|", "rule \"-get|\"");
    expect_refused("on +a|b|c", "rule \"+a|b|c\"");
    expect_refused("on +get$", "rule \"+get$\"");
    expect_refused("on ~", "pattern");
    expect_refused("on &", "pattern");
    expect_refused("on %X~a", "%R~");
    expect_refused("on %R~", "%R~");
    expect_refused("on %Rx", "%R~");
    expect_refused("on sudo", "not an ACL rule");
    expect_refused("on\t+get", "printable ASCII");
    expect_refused("on\n+get", "printable ASCII");
    expect_refused("on ~caf\xc3\xa9", "printable ASCII");
    expect_refused("on ~\xff", "printable ASCII");
}

static void test_sizes_are_bounded(void **state)
{
    (void)state;
    char name[ENGINE_ACCESS_NAME_MAX + 3], pattern[600], many[ENGINE_ACCESS_MAX + 2];

    memset(name, 'a', sizeof(name));
    name[0] = '+';
    name[ENGINE_ACCESS_NAME_MAX + 1] = '\0';
    expect_ok(name); /* + and 64 characters */
    name[ENGINE_ACCESS_NAME_MAX + 1] = 'a';
    name[ENGINE_ACCESS_NAME_MAX + 2] = '\0';
    expect_refused(name, "+ or - must be followed");

    memset(pattern, 'k', sizeof(pattern));
    pattern[0] = '~';
    pattern[513] = '\0';
    expect_ok(pattern); /* ~ and 512 characters */
    pattern[513] = 'k';
    pattern[514] = '\0';
    expect_refused(pattern, "pattern of 1 to 512");

    memset(many, ' ', sizeof(many));
    many[ENGINE_ACCESS_MAX + 1] = '\0';
    expect_refused(many, "at most 4096 characters");
    for (size_t i = 0; i + 2 < ENGINE_ACCESS_MAX; i += 3)
        memcpy(many + i, "+a ", 3);
    many[ENGINE_ACCESS_MAX] = '\0';
    expect_refused(many, "at most 256 rules");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_what_tenants_write),
        cmocka_unit_test(test_passwords_and_resets_are_refused),
        cmocka_unit_test(test_malformed_rules_are_named),
        cmocka_unit_test(test_sizes_are_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
