/* test_resp_reader.c -- the bounded RESP reader (engine/resp_reader.h):
 * each limit refuses what breaks it before allocating, requests and replies
 * within the limits parse as hiredis parses them, fed whole or byte by
 * byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "resp.h"
#include "resp_reader.h"
#include "sentinel.h"

#include "fixtures/fixture.h"

/* Small limits, so that each is easy to reach. */
static const struct resp_limits small = {
    .max_elements = 4,
    .max_depth = 2,
    .max_string = 16,
    .max_reply = 1024,
    .max_buffered = 64,
};

/* Feed all of bytes to a new reader bounded by limits and return what the
 * first resp_reader_next() says, with the reply (if any) in *reply and the
 * message in err. */
static int read_one(const struct resp_limits *limits, const char *bytes, size_t len,
                    redisReply **reply, char *err, size_t errsize)
{
    redisReader *r = resp_reader_new(limits);
    assert_int_equal(redisReaderFeed(r, bytes, len), REDIS_OK);
    int rc = resp_reader_next(r, reply, err, errsize);
    resp_reader_free(r);
    return rc;
}

/* Assert that the RESP in text is refused with a message containing
 * want. */
static void expect_refused(const struct resp_limits *limits, const char *text, size_t len,
                           const char *want)
{
    redisReply *reply = (redisReply *)1;
    char err[128] = "";

    if (read_one(limits, text, len, &reply, err, sizeof(err)) != -1)
        fail_msg("%.*s was not refused", (int)(len < 40 ? len : 40), text);
    assert_null(reply);
    if (strstr(err, want) == NULL)
        fail_msg("refused with \"%s\", expected \"...%s...\"", err, want);
}

/* Assert that the RESP in text parses into one reply, which is returned. */
static redisReply *expect_parsed(const struct resp_limits *limits, const char *text, size_t len)
{
    redisReply *reply = NULL;
    char err[128] = "";

    if (read_one(limits, text, len, &reply, err, sizeof(err)) != 1)
        fail_msg("not parsed: %s", err[0] ? err : "incomplete");
    return reply;
}

static void test_request_parses(void **state)
{
    static const char req[] = "*3\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n$5\r\npw\0xy\r\n";
    redisReader *r = resp_reader_new(&small);
    redisReply *q = NULL;
    char err[128];

    (void)state;
    /* Byte by byte: nothing until the last byte, then the request. */
    for (size_t i = 0; i + 1 < sizeof(req) - 1; i++) {
        assert_int_equal(redisReaderFeed(r, req + i, 1), REDIS_OK);
        assert_int_equal(resp_reader_next_request(r, &q, err, sizeof(err)), 0);
        assert_null(q);
    }
    assert_int_equal(redisReaderFeed(r, req + sizeof(req) - 2, 1), REDIS_OK);
    assert_int_equal(resp_reader_next_request(r, &q, err, sizeof(err)), 1);
    assert_int_equal(q->elements, 3);
    assert_string_equal(q->element[0]->str, "AUTH");
    /* An argument keeps every byte, NUL included: its length says so. */
    assert_int_equal(q->element[2]->len, 5);
    assert_memory_equal(q->element[2]->str, "pw\0xy", 5);
    resp_reply_free(q);
    assert_int_equal(resp_reader_buffered(r), 0);
    resp_reader_free(r);
}

static void test_pipelined_requests(void **state)
{
    static const char two[] = "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n*1\r\n$4\r\nPI";
    redisReader *r = resp_reader_new(&small);
    redisReply *q = NULL;
    char err[128];

    (void)state;
    assert_int_equal(redisReaderFeed(r, two, sizeof(two) - 1), REDIS_OK);
    assert_int_equal(resp_reader_next_request(r, &q, err, sizeof(err)), 1);
    assert_string_equal(q->element[0]->str, "PING");
    resp_reply_free(q);
    assert_int_equal(resp_reader_next_request(r, &q, err, sizeof(err)), 1);
    assert_string_equal(q->element[1]->str, "hi");
    resp_reply_free(q);
    /* The third is not complete: it waits, and what of it is not yet
     * parsed (hiredis has taken its header) counts as buffered. */
    assert_int_equal(resp_reader_next_request(r, &q, err, sizeof(err)), 0);
    assert_in_range(resp_reader_buffered(r), 1, strlen("*1\r\n$4\r\nPI"));
    resp_reader_free(r);
}

static void test_array_counts(void **state)
{
    (void)state;
    redisReply *ok = expect_parsed(&small, "*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n", 20);
    assert_int_equal(ok->elements, 4);
    resp_reply_free(ok);
    expect_refused(&small, "*5\r\n", 4, "array of 5 elements, more than 4");
    /* The count that made hiredis allocate 2^31 slots: refused on its
     * header alone. */
    expect_refused(&small, "*2147483647\r\n", 13, "array of 2147483647 elements, more than 4");
    expect_refused(&resp_engine_limits, "*2147483647\r\n", 13, "array of 2147483647 elements");
    /* Inside an array too, after what was already built (freed). */
    expect_refused(&small, "*2\r\n$1\r\na\r\n*9\r\n", 15, "array of 9 elements");
    /* hiredis's own range checks still apply. */
    expect_refused(&small, "*-2\r\n", 5, "Multi-bulk length out of range");
    expect_refused(&small, "*99999999999999\r\n", 17, "Multi-bulk length out of range");
}

static void test_nesting(void **state)
{
    (void)state;
    redisReply *ok = expect_parsed(&small, "*1\r\n*1\r\n:7\r\n", 12);
    assert_int_equal(ok->element[0]->element[0]->integer, 7);
    resp_reply_free(ok);
    expect_refused(&small, "*1\r\n*1\r\n*1\r\n:7\r\n", 16, "arrays nested 3 deep, more than 2");
    /* A request is flat: the listener's limits refuse any nesting. */
    expect_refused(&sentinel_request_limits, "*1\r\n*0\r\n", 8, "arrays nested 2 deep");
}

static void test_string_lengths(void **state)
{
    char text[64];

    (void)state;
    snprintf(text, sizeof(text), "$16\r\n%s\r\n", "0123456789abcdef");
    resp_reply_free(expect_parsed(&small, text, strlen(text)));
    snprintf(text, sizeof(text), "$17\r\n%s\r\n", "0123456789abcdefg");
    expect_refused(&small, text, strlen(text), "string of 17 bytes, more than 16");
    snprintf(text, sizeof(text), "+%s\r\n", "0123456789abcdefg");
    expect_refused(&small, text, strlen(text), "string of 17 bytes");
    snprintf(text, sizeof(text), "-%s\r\n", "0123456789abcdefg");
    expect_refused(&small, text, strlen(text), "string of 17 bytes");
}

static void test_buffered_bytes(void **state)
{
    static const char head[] = "*1\r\n$2000000000\r\n";
    char chunk[16];
    redisReader *r = resp_reader_new(&small);
    redisReply *q = NULL;
    char err[128];
    size_t fed = sizeof(head) - 1;
    int rc;

    (void)state;
    memset(chunk, 'x', sizeof(chunk));
    assert_int_equal(redisReaderFeed(r, head, fed), REDIS_OK);
    /* A declared 2 GB string: waited for while what it holds fits the
     * buffer limit, refused as soon as it holds more. */
    while ((rc = resp_reader_next_request(r, &q, err, sizeof(err))) == 0) {
        assert_true(resp_reader_buffered(r) <= small.max_buffered);
        assert_true(fed <= small.max_buffered + sizeof(head));
        assert_int_equal(redisReaderFeed(r, chunk, sizeof(chunk)), REDIS_OK);
        fed += sizeof(chunk);
    }
    assert_int_equal(rc, -1);
    assert_null(q);
    assert_non_null(strstr(err, " bytes without a complete reply, more than 64"));
    /* Spent: it holds nothing, takes nothing more, and stays failed. */
    assert_int_equal(resp_reader_buffered(r), 0);
    assert_int_equal(redisReaderFeed(r, chunk, sizeof(chunk)), REDIS_ERR);
    char again[128];
    assert_int_equal(resp_reader_next_request(r, &q, again, sizeof(again)), -1);
    assert_string_equal(again, err);
    resp_reader_free(r);

    /* A line that never ends is bounded the same way. */
    char line[80];
    memset(line, 'y', sizeof(line));
    line[0] = '+';
    expect_refused(&small, line, sizeof(line), " bytes without a complete reply, more than 64");
}

/* The listener's own limits: a real client's longest request passes, one
 * argument or one byte more does not. */
static void test_sentinel_request_limits(void **state)
{
    static const char hello[] = "*7\r\n$5\r\nHELLO\r\n$1\r\n2\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n"
                                "$64\r\n0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
                                "abcdef\r\n$7\r\nSETNAME\r\n$3\r\napp\r\n";
    char *text = xmalloc(8 * 4096);
    size_t len;

    (void)state;
    resp_reply_free(expect_parsed(&sentinel_request_limits, hello, sizeof(hello) - 1));
    len = (size_t)sprintf(text, "*%zu\r\n", sentinel_request_limits.max_elements);
    for (size_t i = 0; i < sentinel_request_limits.max_elements; i++)
        len += (size_t)sprintf(text + len, "$1\r\nx\r\n");
    resp_reply_free(expect_parsed(&sentinel_request_limits, text, len));
    len = (size_t)sprintf(text, "*%zu\r\n", sentinel_request_limits.max_elements + 1);
    expect_refused(&sentinel_request_limits, text, len, "elements, more than");
    len = (size_t)sprintf(text, "*1\r\n$%zu\r\n", sentinel_request_limits.max_string + 1);
    memset(text + len, 'a', sentinel_request_limits.max_string + 1);
    len += sentinel_request_limits.max_string + 1;
    len += (size_t)sprintf(text + len, "\r\n");
    expect_refused(&sentinel_request_limits, text, len, "bytes, more than");
    free(text);
}

static void test_reply_budget(void **state)
{
    const struct resp_limits tight = {.max_elements = 4,
                                      .max_depth = 2,
                                      .max_string = 16,
                                      .max_reply = 3 * sizeof(redisReply) + 4 * sizeof(void *),
                                      .max_buffered = 64};
    (void)state;
    /* An array and two integers fit; a third object does not. */
    resp_reply_free(expect_parsed(&tight, "*2\r\n:1\r\n:2\r\n", 12));
    expect_refused(&tight, "*3\r\n:1\r\n:2\r\n:3\r\n", 16, "reply holding more than");
    /* The budget is per reply: the next one starts from nothing. */
    redisReader *r = resp_reader_new(&tight);
    redisReply *q = NULL;
    char err[128];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(redisReaderFeed(r, "*2\r\n:1\r\n:2\r\n", 12), REDIS_OK);
        assert_int_equal(resp_reader_next(r, &q, err, sizeof(err)), 1);
        resp_reply_free(q);
    }
    resp_reader_free(r);
}

static void test_not_requests(void **state)
{
    static const struct {
        const char *text;
        const char *want;
    } cases[] = {
        {"+PING\r\n", "request is not an array of bulk strings"},
        {"*0\r\n", "request is not an array of bulk strings"},
        {"*-1\r\n", "request is not an array of bulk strings"},
        {"*1\r\n:1\r\n", "request is not an array of bulk strings"},
        {"*2\r\n$4\r\nPING\r\n$-1\r\n", "request is not an array of bulk strings"},
        {"PING\r\n", "Protocol error, got \"P\" as reply type byte"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        redisReader *r = resp_reader_new(&small);
        redisReply *q = (redisReply *)1;
        char err[128] = "";
        assert_int_equal(redisReaderFeed(r, cases[i].text, strlen(cases[i].text)), REDIS_OK);
        assert_int_equal(resp_reader_next_request(r, &q, err, sizeof(err)), -1);
        assert_null(q);
        assert_string_equal(err, cases[i].want);
        resp_reader_free(r);
    }
}

/* Every captured engine reply parses under the engine client's limits, to
 * the same tree hiredis's own reader makes. */
static void test_engine_fixtures_parse(void **state)
{
    static const char *const names[] = {
        "redis/cluster_shards.resp",  "redis/cluster_slots.resp",
        "redis/command_info.resp",    "redis/role_primary.resp",
        "valkey/cluster_shards.resp", "valkey/command_info.resp",
        "valkey/role_replica.resp",   "valkey/cluster_slots_loading.resp",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        size_t len;
        char *bytes = fixture_load(names[i], &len);
        redisReply *plain = fixture_reply_bytes(bytes, len);
        redisReply *bounded = expect_parsed(&resp_engine_limits, bytes, len);
        assert_int_equal(bounded->type, plain->type);
        assert_int_equal(bounded->elements, plain->elements);
        resp_reply_free(plain);
        resp_reply_free(bounded);
        free(bytes);
    }
}

/* A reader hiredis made (as a context's is) bounded in place. */
static void test_bound_in_place(void **state)
{
    redisReader *r = redisReaderCreate();
    redisReply *q = NULL;
    char err[128];

    (void)state;
    resp_reader_bound(r, &small);
    assert_int_equal(redisReaderFeed(r, "*1\r\n:1\r\n*5\r\n", 12), REDIS_OK);
    assert_int_equal(resp_reader_next(r, &q, err, sizeof(err)), 1);
    resp_reply_free(q);
    assert_int_equal(resp_reader_next(r, &q, err, sizeof(err)), -1);
    assert_string_equal(err, "array of 5 elements, more than 4");
    /* A refusal is a protocol error to hiredis too (a context copies it),
     * never the out-of-memory cairnd would abort on. */
    assert_int_equal(r->err, REDIS_ERR_PROTOCOL);
    assert_string_equal(r->errstr, "array of 5 elements, more than 4");
    assert_int_equal(redisReaderFeed(r, ":1\r\n", 4), REDIS_ERR);
    resp_reader_unbound(r);
    redisReaderFree(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_parses),
        cmocka_unit_test(test_pipelined_requests),
        cmocka_unit_test(test_array_counts),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_string_lengths),
        cmocka_unit_test(test_buffered_bytes),
        cmocka_unit_test(test_reply_budget),
        cmocka_unit_test(test_not_requests),
        cmocka_unit_test(test_engine_fixtures_parse),
        cmocka_unit_test(test_bound_in_place),
        cmocka_unit_test(test_sentinel_request_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
