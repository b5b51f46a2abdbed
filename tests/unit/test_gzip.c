/* test_gzip.c -- gzip bodies (lib/gzip.h): round trips, data from another
 * gzip, the bound on expansion, and damaged input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crypto.h"
#include "gzip.h"
#include "xalloc.h"

/* `printf 'hello, cairn\n' | gzip -n -9` */
static const unsigned char HELLO_GZ[] = {
    0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xcb,
    0x48, 0xcd, 0xc9, 0xc9, 0xd7, 0x51, 0x48, 0x4e, 0xcc, 0x2c, 0xca,
    0xe3, 0x02, 0x00, 0xd1, 0x3c, 0x1c, 0xb8, 0x0d, 0x00, 0x00, 0x00,
};

/* A metrics push of n samples, shaped like the agent's. */
static char *push_body(int n)
{
    size_t cap = 256 + (size_t)n * 512, len = 0;
    char *s = xmalloc(cap);

    len += (size_t)snprintf(s + len, cap - len, "{\"period_s\":60,\"dropped\":0,\"samples\":[");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(
            s + len, cap - len,
            "%s{\"node_id\":\"7d0c9a8e-7b1f-4e2a-8c3d-6f4e2a1b%04x\",\"at\":%d,\"values\":"
            "{\"CPUUtilization\":%d.25,\"FreeableMemory\":%d,\"CurrConnections\":%d,"
            "\"CacheHits\":%d,\"CacheMisses\":%d,\"GetTypeCmdsLatency\":%d.125}}",
            i ? "," : "", i % 7, 1764504000 + 60 * (i / 7), i % 100, 612651417 + 4096 * i, i % 13,
            1000 + i, i % 17, 1 + i % 9);
    snprintf(s + len, cap - len, "]}");
    return s;
}

/* decompress, expecting GZIP_OK; returns the text (freed by the caller). */
static char *expand(const void *in, size_t len, size_t max, size_t *out_len)
{
    char *out = NULL, err[128] = "";
    enum gzip_status st = gzip_decompress(in, len, max, &out, out_len, err, sizeof(err));

    if (st != GZIP_OK)
        fail_msg("gzip_decompress: status %d (%s)", st, err);
    assert_non_null(out);
    assert_int_equal(out[*out_len], '\0');
    return out;
}

/* decompress, expecting st and (unless NULL) the error text err. */
static void refused(const void *in, size_t len, size_t max, enum gzip_status st, const char *err)
{
    char *out = (char *)"untouched", got[128] = "";
    size_t out_len = 99;

    assert_int_equal(gzip_decompress(in, len, max, &out, &out_len, got, sizeof(got)), st);
    assert_null(out);
    assert_int_equal(out_len, 0);
    if (err != NULL)
        assert_string_equal(got, err);
}

static void test_round_trip(void **state)
{
    char *body = push_body(1000);
    size_t len = strlen(body), zlen = 0, back_len = 0;

    (void)state;
    unsigned char *z = gzip_compress(body, len, &zlen);
    assert_true(zlen < len / 4);
    char *back = expand(z, zlen, len, &back_len);
    assert_int_equal(back_len, len);
    assert_memory_equal(back, body, len);
    free(back);
    free(z);
    free(body);
}

static void test_empty_and_incompressible(void **state)
{
    unsigned char noise[4096];
    size_t zlen = 0, back_len = 0;

    (void)state;
    unsigned char *z = gzip_compress("", 0, &zlen);
    char *back = expand(z, zlen, 0, &back_len);
    assert_int_equal(back_len, 0);
    free(back);
    free(z);
    /* Random bytes come out larger: the caller decides whether to use them. */
    crypto_random(noise, sizeof(noise));
    z = gzip_compress(noise, sizeof(noise), &zlen);
    assert_true(zlen > sizeof(noise));
    back = expand(z, zlen, sizeof(noise), &back_len);
    assert_int_equal(back_len, sizeof(noise));
    assert_memory_equal(back, noise, sizeof(noise));
    free(back);
    free(z);
}

static void test_data_from_gzip(void **state)
{
    size_t len = 0;

    (void)state;
    char *text = expand(HELLO_GZ, sizeof(HELLO_GZ), 1024, &len);
    assert_string_equal(text, "hello, cairn\n");
    free(text);
}

static void test_members_one_after_the_other(void **state)
{
    unsigned char two[2 * sizeof(HELLO_GZ)];
    size_t len = 0;

    (void)state;
    memcpy(two, HELLO_GZ, sizeof(HELLO_GZ));
    memcpy(two + sizeof(HELLO_GZ), HELLO_GZ, sizeof(HELLO_GZ));
    char *text = expand(two, sizeof(two), 1024, &len);
    assert_string_equal(text, "hello, cairn\nhello, cairn\n");
    free(text);
    /* Whatever follows a member must be a whole member too. */
    refused(two, sizeof(two) - 1, 1024, GZIP_CORRUPT, "the gzip data ends early");
    memcpy(two + sizeof(HELLO_GZ), "{}", 2);
    refused(two, sizeof(HELLO_GZ) + 2, 1024, GZIP_CORRUPT, "incorrect header check");
}

static void test_bound_is_on_the_expanded_size(void **state)
{
    size_t len = 0;

    (void)state;
    /* Exactly at the limit passes; one byte under it does not. */
    char *text = expand(HELLO_GZ, sizeof(HELLO_GZ), 13, &len);
    assert_int_equal(len, 13);
    free(text);
    refused(HELLO_GZ, sizeof(HELLO_GZ), 12, GZIP_TOO_LARGE, NULL);
    refused(HELLO_GZ, sizeof(HELLO_GZ), 0, GZIP_TOO_LARGE, NULL);

    /* A bomb: 64 MiB of spaces in some 64 kB, against a 1 MiB limit. */
    size_t big = 64u << 20, zlen = 0;
    char *spaces = xmalloc(big);
    memset(spaces, ' ', big);
    unsigned char *z = gzip_compress(spaces, big, &zlen);
    free(spaces);
    assert_true(zlen < big / 500);
    refused(z, zlen, 1u << 20, GZIP_TOO_LARGE, NULL);
    free(z);
}

static void test_damaged_input(void **state)
{
    unsigned char bad[sizeof(HELLO_GZ)];

    (void)state;
    refused("", 0, 1024, GZIP_CORRUPT, "the gzip data ends early");
    refused("{\"period_s\": 60}", 16, 1024, GZIP_CORRUPT, "incorrect header check");
    refused(HELLO_GZ, sizeof(HELLO_GZ) - 1, 1024, GZIP_CORRUPT, "the gzip data ends early");
    refused(HELLO_GZ, 10, 1024, GZIP_CORRUPT, "the gzip data ends early");
    memcpy(bad, HELLO_GZ, sizeof(bad));
    bad[sizeof(bad) - 6] ^= 0x01; /* the CRC-32 */
    refused(bad, sizeof(bad), 1024, GZIP_CORRUPT, "incorrect data check");
    memcpy(bad, HELLO_GZ, sizeof(bad));
    bad[sizeof(bad) - 2] ^= 0x01; /* the length */
    refused(bad, sizeof(bad), 1024, GZIP_CORRUPT, "incorrect length check");
    memcpy(bad, HELLO_GZ, sizeof(bad));
    bad[2] = 0x07; /* a method other than deflate */
    refused(bad, sizeof(bad), 1024, GZIP_CORRUPT, "unknown compression method");
}

struct collected {
    char buf[4096];
    size_t len;
};

static void collect(const void *data, size_t len, void *arg)
{
    struct collected *c = arg;
    assert_true(c->len + len <= sizeof(c->buf));
    memcpy(c->buf + c->len, data, len);
    c->len += len;
}

/* Two members fed a byte at a time expand to both texts; cut short, the
 * stream is not whole; past the bound it stops; garbage is corrupt. */
static void test_inflater(void **state)
{
    size_t la, lb;
    unsigned char *a = gzip_compress_level("snapshot ", 9, 1, &la);
    unsigned char *b = gzip_compress("parts", 5, &lb);
    unsigned char both[256];
    char err[128];
    (void)state;
    memcpy(both, a, la);
    memcpy(both + la, b, lb);

    struct collected c = {{0}, 0};
    struct gzip_inflater *g = gzip_inflater_new();
    for (size_t i = 0; i < la + lb; i++) {
        assert_int_equal(gzip_inflater_feed(g, both + i, 1, 100, collect, &c, err, sizeof(err)),
                         GZIP_OK);
        assert_int_equal(gzip_inflater_whole(g), i + 1 == la || i + 1 == la + lb);
    }
    assert_int_equal(c.len, 14);
    assert_memory_equal(c.buf, "snapshot parts", 14);
    assert_int_equal(gzip_inflater_total(g), 14);
    gzip_inflater_free(g);

    c.len = 0;
    g = gzip_inflater_new();
    assert_int_equal(gzip_inflater_feed(g, both, la + lb, 10, collect, &c, err, sizeof(err)),
                     GZIP_TOO_LARGE);
    gzip_inflater_free(g);

    g = gzip_inflater_new();
    assert_int_equal(gzip_inflater_feed(g, "REDIS0011", 9, 100, collect, &c, err, sizeof(err)),
                     GZIP_CORRUPT);
    gzip_inflater_free(g);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_inflater),
        cmocka_unit_test(test_empty_and_incompressible),
        cmocka_unit_test(test_data_from_gzip),
        cmocka_unit_test(test_members_one_after_the_other),
        cmocka_unit_test(test_bound_is_on_the_expanded_size),
        cmocka_unit_test(test_damaged_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
