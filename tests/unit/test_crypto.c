/* test_crypto.c -- SHA-256, hex, base64url and comparison helpers (lib/crypto.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "crypto.h"

/* Lower-case hex of SHA-256(text). */
static void sha256_hex(const char *text, char out[2 * CRYPTO_SHA256_LEN + 1])
{
    unsigned char digest[CRYPTO_SHA256_LEN];
    crypto_sha256(text, strlen(text), digest);
    crypto_hex(digest, sizeof(digest), out);
}

static void test_sha256_vectors(void **state)
{
    char hex[2 * CRYPTO_SHA256_LEN + 1];

    (void)state;
    /* FIPS 180-2 examples. */
    sha256_hex("abc", hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    sha256_hex("", hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

/* RFC 4231, test case 2. */
static void test_hmac_sha256(void **state)
{
    unsigned char mac[CRYPTO_SHA256_LEN];
    char hex[2 * CRYPTO_SHA256_LEN + 1];
    static const char data[] = "what do ya want for nothing?";

    (void)state;
    crypto_hmac_sha256("Jefe", 4, data, strlen(data), mac);
    crypto_hex(mac, sizeof(mac), hex);
    assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

static void test_hex(void **state)
{
    static const unsigned char bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
    char out[2 * sizeof(bytes) + 1];

    (void)state;
    crypto_hex(bytes, sizeof(bytes), out);
    assert_string_equal(out, "00017f80abff");
    memset(out, 'x', sizeof(out));
    crypto_hex(bytes, 0, out);
    assert_string_equal(out, "");
}

static void test_b64url_vectors(void **state)
{
    /* RFC 4648 section 10, without padding. */
    static const struct {
        const char *plain, *encoded;
    } vectors[] = {
        {"", ""},           {"f", "Zg"},          {"fo", "Zm8"},          {"foo", "Zm9v"},
        {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"},
    };
    char out[16];
    unsigned char back[16];

    (void)state;
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        size_t n = strlen(vectors[i].plain);
        crypto_b64url(vectors[i].plain, n, out);
        assert_string_equal(out, vectors[i].encoded);
        assert_int_equal(crypto_b64url_len(n), strlen(vectors[i].encoded));
        long got = crypto_b64url_decode(vectors[i].encoded, strlen(vectors[i].encoded), back);
        assert_int_equal(got, n);
        assert_memory_equal(back, vectors[i].plain, n);
    }
}

static void test_b64url_alphabet(void **state)
{
    /* The bytes standard base64 writes as "+/8=" and "//" are "-_8" and "__" here. */
    static const unsigned char plus_slash[] = {0xfb, 0xff};
    static const unsigned char ones[] = {0xff, 0xff, 0xff};
    char out[8];
    unsigned char back[8];

    (void)state;
    crypto_b64url(plus_slash, sizeof(plus_slash), out);
    assert_string_equal(out, "-_8");
    crypto_b64url(ones, sizeof(ones), out);
    assert_string_equal(out, "____");
    assert_int_equal(crypto_b64url_decode("-_8", 3, back), 2);
    assert_memory_equal(back, plus_slash, 2);
}

static void test_b64url_round_trip(void **state)
{
    unsigned char data[10], back[10];
    char text[32];

    (void)state;
    for (size_t n = 0; n <= sizeof(data); n++) {
        for (size_t i = 0; i < n; i++)
            data[i] = (unsigned char)(i * 97 + n * 31 + 0x80);
        memset(text, '#', sizeof(text));
        crypto_b64url(data, n, text);
        assert_int_equal(strlen(text), crypto_b64url_len(n));
        assert_int_equal(strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                      "0123456789-_"),
                         strlen(text));
        memset(back, 0, sizeof(back));
        long got = crypto_b64url_decode(text, strlen(text), back);
        if (got != (long)n)
            fail_msg("decoding %s (%zu bytes) gave %ld bytes", text, n, got);
        assert_memory_equal(back, data, n);
    }
}

static void test_b64url_decode_padding(void **state)
{
    unsigned char back[8];

    (void)state;
    assert_int_equal(crypto_b64url_decode("Zg==", 4, back), 1);
    assert_memory_equal(back, "f", 1);
    assert_int_equal(crypto_b64url_decode("Zm8=", 4, back), 2);
    assert_memory_equal(back, "fo", 2);
    /* Only len bytes are read. */
    assert_int_equal(crypto_b64url_decode("Zm9vYmFy", 4, back), 3);
    assert_memory_equal(back, "foo", 3);
}

static void test_b64url_decode_rejects(void **state)
{
    static const char *const bad[] = {
        "Zm9+",
        "Zm9/",
        "Zm 9",
        "Zm.v",
        "Zm=v",
        "Z\nm9",
        "Zm9v\xc3\xa9",
        "!!!!",
        /* Lengths that no encoding has: len % 4 == 1. */
        "Z",
        "Zm9vY",
        "Zm9vYmFyZ",
        "Z===",
    };
    unsigned char back[16];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        long got = crypto_b64url_decode(bad[i], strlen(bad[i]), back);
        if (got != -1)
            fail_msg("crypto_b64url_decode(\"%s\") gave %ld, expected -1", bad[i], got);
    }
}

static void test_equal(void **state)
{
    static const unsigned char a[] = {1, 2, 3, 4, 5, 6, 7, 8};
    static const unsigned char b[] = {1, 2, 3, 4, 5, 6, 7, 8};
    static const unsigned char first[] = {0, 2, 3, 4, 5, 6, 7, 8};
    static const unsigned char last[] = {1, 2, 3, 4, 5, 6, 7, 9};

    (void)state;
    assert_true(crypto_equal(a, b, sizeof(a)));
    assert_false(crypto_equal(a, first, sizeof(a)));
    assert_false(crypto_equal(a, last, sizeof(a)));
    /* Only n bytes are compared. */
    assert_true(crypto_equal(a, last, sizeof(a) - 1));
    assert_true(crypto_equal(a, first, 0));
}

static void test_random(void **state)
{
    unsigned char a[32], b[32];

    (void)state;
    crypto_random(a, sizeof(a));
    crypto_random(b, sizeof(b));
    assert_memory_not_equal(a, b, sizeof(a));
}

static void test_unhex(void **state)
{
    unsigned char out[4], bytes[3] = {0x00, 0xab, 0xff};
    char text[7];
    (void)state;
    crypto_hex(bytes, sizeof(bytes), text);
    assert_true(crypto_unhex(text, 3, out));
    assert_memory_equal(out, bytes, 3);
    assert_true(crypto_unhex("00ABff", 3, out));
    assert_memory_equal(out, bytes, 3);
    assert_false(crypto_unhex("0g", 1, out));
    assert_false(crypto_unhex("g0", 1, out));
    assert_false(crypto_unhex("0", 1, out)); /* the terminator is not a digit */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_hmac_sha256),
        cmocka_unit_test(test_hex),
        cmocka_unit_test(test_b64url_vectors),
        cmocka_unit_test(test_b64url_alphabet),
        cmocka_unit_test(test_b64url_round_trip),
        cmocka_unit_test(test_b64url_decode_padding),
        cmocka_unit_test(test_b64url_decode_rejects),
        cmocka_unit_test(test_equal),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_unhex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
