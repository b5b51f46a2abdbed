/* test_sigv4.c -- AWS Signature Version 4 (lib/sigv4.h), against the
 * example of AWS's documentation and signatures botocore computed for the
 * same requests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crypto.h"
#include "sigv4.h"

static const char form_type[] = "application/x-www-form-urlencoded; charset=utf-8";

/* The signature of req under the Authorization header auth. */
static void check_signature(const struct sigv4_request *req, const char *auth, const char *amz_date,
                            const char *secret, const char *want)
{
    struct sigv4_credential cred;
    char err[128], got[SIGV4_HEX_LEN + 1];

    assert_true(sigv4_parse(auth, &cred, err, sizeof(err)));
    assert_true(sigv4_signature(req, &cred, amz_date, secret, got));
    assert_string_equal(got, want);
    assert_string_equal(cred.signature, want);
}

/* AWS's documented example: IAM ListUsers, signed 2015-08-30. */
static void test_documented_example(void **state)
{
    const struct sigv4_header headers[] = {
        {"Host", "iam.amazonaws.com"},
        {"Content-Type", form_type},
        {"X-Amz-Date", "20150830T123600Z"},
    };
    const struct sigv4_request req = {"GET", "/", "Action=ListUsers&Version=2010-05-08", headers, 3,
                                      "",    0};
    (void)state;
    check_signature(&req,
                    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
                    "SignedHeaders=content-type;host;x-amz-date, "
                    "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
                    "20150830T123600Z", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                    "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
}

/* What the AWS tools send an ElastiCache endpoint: a form-encoded POST. */
static void test_form_post(void **state)
{
    static const char body[] =
        "Action=DescribeReplicationGroups&Version=2015-02-02&ReplicationGroupId=orders";
    const struct sigv4_header headers[] = {
        {"Content-Type", form_type},
        {"X-Amz-Date", "20261201T101500Z"},
        {"Host", "127.0.0.1:8080"},
        {"Content-Length", "77"},
    };
    const struct sigv4_request req = {"POST", "/", NULL, headers, 4, body, strlen(body)};
    (void)state;
    check_signature(&req,
                    "AWS4-HMAC-SHA256 Credential=3f9c0a1b2d4e/20261201/us-east-1/elasticache/"
                    "aws4_request, SignedHeaders=content-type;host;x-amz-date, "
                    "Signature=3dee6a9e33ea9769bcdceac7e0baba7d25b01cfe57cfb3421bd4a1e74832f97a",
                    "20261201T101500Z", "k8Jq0_secret-value_Not-Real_AbCdEfGhIjKlMnOpQ",
                    "3dee6a9e33ea9769bcdceac7e0baba7d25b01cfe57cfb3421bd4a1e74832f97a");

    /* One byte more of body, or another secret, is another signature. */
    struct sigv4_credential cred;
    char err[128], got[SIGV4_HEX_LEN + 1];
    assert_true(
        sigv4_parse("AWS4-HMAC-SHA256 Credential=3f9c0a1b2d4e/20261201/us-east-1/"
                    "elasticache/aws4_request, SignedHeaders=content-type;host;x-amz-date, "
                    "Signature=3dee6a9e33ea9769bcdceac7e0baba7d25b01cfe57cfb3421bd4a1e74832f97a",
                    &cred, err, sizeof(err)));
    struct sigv4_request longer = req;
    longer.payload_len = strlen(body) - 1;
    assert_true(sigv4_signature(&longer, &cred, "20261201T101500Z",
                                "k8Jq0_secret-value_Not-Real_AbCdEfGhIjKlMnOpQ", got));
    assert_string_not_equal(got, cred.signature);
    assert_true(sigv4_signature(&req, &cred, "20261201T101500Z", "another", got));
    assert_string_not_equal(got, cred.signature);
}

/* Query parameters are sorted and encoded as AWS encodes them. */
static void test_query_is_canonical(void **state)
{
    const struct sigv4_header headers[] = {
        {"content-type", form_type},
        {"host", "iam.amazonaws.com"},
        {"x-amz-date", "20261201T101500Z"},
    };
    const struct sigv4_request req = {
        "GET", "/", "Version=2010-05-08&Action=ListUsers&Marker=a%20b%2Fc~d", headers, 3, "", 0};
    (void)state;
    char *canonical = sigv4_canonical_request(&req, "content-type;host;x-amz-date");
    assert_non_null(canonical);
    assert_non_null(
        strstr(canonical, "\nAction=ListUsers&Marker=a%20b%2Fc~d&Version=2010-05-08\n"));
    free(canonical);
    check_signature(&req,
                    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261201/us-east-1/iam/aws4_request, "
                    "SignedHeaders=content-type;host;x-amz-date, "
                    "Signature=bed06497c1c8eb549960a45e08671d700b7a6fa4a5a563e135864914b0911ba2",
                    "20261201T101500Z", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                    "bed06497c1c8eb549960a45e08671d700b7a6fa4a5a563e135864914b0911ba2");
}

/* Header values are trimmed and their spaces folded; a signed header the
 * request lacks is no signature at all. */
static void test_headers(void **state)
{
    const struct sigv4_header headers[] = {
        {"X-Amz-Date", "20261201T101500Z"},
        {"Host", "  example.com  "},
        {"X-Custom", "a   b\t c"},
        {"x-custom", "second"},
    };
    const struct sigv4_request req = {"POST", "", NULL, headers, 4, "x", 1};
    (void)state;
    char *c = sigv4_canonical_request(&req, "host;x-amz-date;x-custom");
    assert_non_null(c);
    assert_non_null(strstr(c, "POST\n/\n\nhost:example.com\nx-amz-date:20261201T101500Z\n"
                              "x-custom:a b c,second\n\nhost;x-amz-date;x-custom\n"));
    free(c);
    assert_null(sigv4_canonical_request(&req, "host;x-amz-date;x-missing"));

    struct sigv4_credential cred;
    char err[128], out[SIGV4_HEX_LEN + 1];
    assert_true(sigv4_parse("AWS4-HMAC-SHA256 Credential=k/20261201/r/s/aws4_request, "
                            "SignedHeaders=host;x-missing, Signature=" /* 64 zeros */
                            "0000000000000000000000000000000000000000000000000000000000000000",
                            &cred, err, sizeof(err)));
    assert_false(sigv4_signature(&req, &cred, "20261201T101500Z", "s", out));
}

static void test_refused_headers(void **state)
{
    static const char *const bad[] = {
        NULL,
        "",
        "Bearer cairn_x",
        "AWS4-HMAC-SHA1 Credential=k/20261201/r/s/aws4_request, SignedHeaders=host, Signature=00",
        "AWS4-HMAC-SHA256 SignedHeaders=host, Signature="
        "0000000000000000000000000000000000000000000000000000000000000000",
        "AWS4-HMAC-SHA256 Credential=k/20261201/r/s/aws4_request, Credential=k/20261201/r/s/"
        "aws4_request, SignedHeaders=host, Signature="
        "0000000000000000000000000000000000000000000000000000000000000000",
        "AWS4-HMAC-SHA256 Credential=k/2026120/r/s/aws4_request, SignedHeaders=host, Signature="
        "0000000000000000000000000000000000000000000000000000000000000000",
        "AWS4-HMAC-SHA256 Credential=k/20261201/r/s/aws5_request, SignedHeaders=host, Signature="
        "0000000000000000000000000000000000000000000000000000000000000000",
        "AWS4-HMAC-SHA256 Credential=/20261201/r/s/aws4_request, SignedHeaders=host, Signature="
        "0000000000000000000000000000000000000000000000000000000000000000",
        "AWS4-HMAC-SHA256 Credential=k/20261201/r/s/aws4_request, SignedHeaders=x-amz-date;host, "
        "Signature=0000000000000000000000000000000000000000000000000000000000000000",
        "AWS4-HMAC-SHA256 Credential=k/20261201/r/s/aws4_request, SignedHeaders=Host, "
        "Signature=0000000000000000000000000000000000000000000000000000000000000000",
        "AWS4-HMAC-SHA256 Credential=k/20261201/r/s/aws4_request, SignedHeaders=host, "
        "Signature=00",
        "AWS4-HMAC-SHA256 Credential=k/20261201/r/s/aws4_request, SignedHeaders=host, "
        "Signature=000000000000000000000000000000000000000000000000000000000000000G",
        "AWS4-HMAC-SHA256 Credential=k/20261201/r/s/aws4_request, SignedHeaders=host, "
        "Signature=0000000000000000000000000000000000000000000000000000000000000000, Extra=1",
    };
    struct sigv4_credential cred;
    char err[128];
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_false(sigv4_parse(bad[i], &cred, err, sizeof(err)));
        assert_true(err[0] != '\0');
    }
    /* A key longer than the field holds is refused, not cut. */
    char long_key[400] = "AWS4-HMAC-SHA256 Credential=";
    memset(long_key + strlen(long_key), 'k', 200);
    strcat(long_key, "/20261201/r/s/aws4_request, SignedHeaders=host, Signature="
                     "0000000000000000000000000000000000000000000000000000000000000000");
    assert_false(sigv4_parse(long_key, &cred, err, sizeof(err)));
}

static void test_dates(void **state)
{
    int64_t t;
    (void)state;
    assert_true(sigv4_parse_date("19700101T000000Z", &t));
    assert_int_equal(t, 0);
    assert_true(sigv4_parse_date("20150830T123600Z", &t));
    assert_int_equal(t, 1440938160);
    assert_true(sigv4_parse_date("20240229T235959Z", &t));
    assert_int_equal(t, 1709251199);
    static const char *const bad[] = {NULL,
                                      "",
                                      "20150830T123600",
                                      "20150830 123600Z",
                                      "2015083T1236000Z",
                                      "20151330T123600Z",
                                      "20150830T253600Z",
                                      "20150830T123600Z0",
                                      "2015-08-30T12:36Z",
                                      "+0150830T123600Z"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(sigv4_parse_date(bad[i], &t));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_documented_example), cmocka_unit_test(test_form_post),
        cmocka_unit_test(test_query_is_canonical), cmocka_unit_test(test_headers),
        cmocka_unit_test(test_refused_headers),    cmocka_unit_test(test_dates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
