/* test_sigv4.c -- AWS Signature Version 4 (lib/sigv4.h), against the
 * example of AWS's documentation, signatures botocore computed for the
 * same requests, AWS's Signature Version 4 test suite and the examples of
 * the S3 documentation (both the verifying and the signing side). */
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

/* ---- signing: AWS's test suite and the S3 examples ---------------------- */

/* A case of AWS's Signature Version 4 test suite (2015-08-30, us-east-1,
 * service "service") or of the S3 documentation's examples: the request,
 * and the canonical request and Authorization header AWS published. */
struct signing_case {
    const char *name;
    const struct sigv4_signer *signer;
    const char *amz_date;
    struct sigv4_request req;
    const char *signed_headers;
    const char *canonical; /* NULL where AWS published only the signature */
    const char *authorization;
};

static const struct sigv4_signer suite_signer = {
    "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1", "service"};
static const struct sigv4_signer s3_signer = {
    "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1", "s3"};

#define SUITE_AT   "20150830T123600Z"
#define S3_AT      "20130524T000000Z"
#define SUITE      &suite_signer, SUITE_AT
#define S3         &s3_signer, S3_AT
#define SUITE_HOST "example.amazonaws.com"
#define S3_HOST    "examplebucket.s3.amazonaws.com"
#define EMPTY_SHA  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SUITE_CRED                                                                                 \
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
#define S3_CRED                                                                                    \
    "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
#define S3_SIGNED "host;x-amz-content-sha256;x-amz-date"

static const struct sigv4_header vanilla[] = {{"Host", SUITE_HOST}, {"X-Amz-Date", SUITE_AT}};
/* get-header-value-trim: values as they follow the colon, spaces and all. */
static const struct sigv4_header trim[] = {{"Host", SUITE_HOST},
                                           {"My-Header1", " value1"},
                                           {"My-Header2", " \"a   b   c\""},
                                           {"X-Amz-Date", SUITE_AT}};
static const struct sigv4_header form[] = {{"Content-Type", "application/x-www-form-urlencoded"},
                                           {"Host", SUITE_HOST},
                                           {"X-Amz-Date", SUITE_AT}};
static const struct sigv4_header s3_range[] = {{"Host", S3_HOST},
                                               {"Range", "bytes=0-9"},
                                               {"x-amz-content-sha256", EMPTY_SHA},
                                               {"x-amz-date", S3_AT}};
static const struct sigv4_header s3_put[] = {
    {"Host", S3_HOST},
    {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
    {"x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"},
    {"x-amz-date", S3_AT},
    {"x-amz-storage-class", "REDUCED_REDUNDANCY"}};
static const struct sigv4_header s3_plain[] = {
    {"Host", S3_HOST}, {"x-amz-content-sha256", EMPTY_SHA}, {"x-amz-date", S3_AT}};

static const struct signing_case signing_cases[] = {
    {"get-vanilla",
     SUITE,
     {"GET", "/", NULL, vanilla, 2, "", 0},
     "host;x-amz-date",
     "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
     "host;x-amz-date\n" EMPTY_SHA,
     SUITE_CRED "SignedHeaders=host;x-amz-date, "
                "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
    {"get-vanilla-query-order-key-case",
     SUITE,
     {"GET", "/", "Param2=value2&Param1=value1", vanilla, 2, "", 0},
     "host;x-amz-date",
     "GET\n/\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\n"
     "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY_SHA,
     SUITE_CRED "SignedHeaders=host;x-amz-date, "
                "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
    {"get-vanilla-query-order-value",
     SUITE,
     {"GET", "/", "Param1=value2&Param1=value1", vanilla, 2, "", 0},
     "host;x-amz-date",
     "GET\n/\nParam1=value1&Param1=value2\nhost:example.amazonaws.com\n"
     "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" EMPTY_SHA,
     SUITE_CRED "SignedHeaders=host;x-amz-date, "
                "Signature=5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694"},
    {"get-header-value-trim",
     SUITE,
     {"GET", "/", NULL, trim, 4, "", 0},
     "host;my-header1;my-header2;x-amz-date",
     "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\nmy-header2:\"a b c\"\n"
     "x-amz-date:20150830T123600Z\n\nhost;my-header1;my-header2;x-amz-date\n" EMPTY_SHA,
     SUITE_CRED "SignedHeaders=host;my-header1;my-header2;x-amz-date, "
                "Signature=acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
    /* A path the client did not encode: the canonical URI encodes it. */
    {"get-utf8",
     SUITE,
     {"GET", "/\xe1\x88\xb4", NULL, vanilla, 2, "", 0},
     "host;x-amz-date",
     "GET\n/%E1%88%B4\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
     "host;x-amz-date\n" EMPTY_SHA,
     SUITE_CRED "SignedHeaders=host;x-amz-date, "
                "Signature=8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"},
    /* The suite's .creq for this case also signs content-length, which its
     * .authz and .sts do not: the published signature is over these three. */
    {"post-x-www-form-urlencoded",
     SUITE,
     {"POST", "/", NULL, form, 3, "Param1=value1", 13},
     "content-type;host;x-amz-date",
     "POST\n/\n\ncontent-type:application/x-www-form-urlencoded\nhost:example.amazonaws.com\n"
     "x-amz-date:20150830T123600Z\n\ncontent-type;host;x-amz-date\n"
     "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
     SUITE_CRED "SignedHeaders=content-type;host;x-amz-date, "
                "Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"},
    /* S3: the payload hash is the x-amz-content-sha256 sent, the path is
     * canonical as sent. */
    {"S3 GET Object",
     S3,
     {"GET", "/test.txt", NULL, s3_range, 4, NULL, 0, EMPTY_SHA, true},
     "host;range;x-amz-content-sha256;x-amz-date",
     "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
     "x-amz-content-sha256:" EMPTY_SHA "\nx-amz-date:20130524T000000Z\n\n"
     "host;range;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA,
     S3_CRED "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
             "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
    /* The key test$file.text, its "$" encoded once by the client. */
    {"S3 PUT Object",
     S3,
     {"PUT", "/test%24file.text", NULL, s3_put, 5, NULL, 0,
      "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072", true},
     "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
     "PUT\n/test%24file.text\n\ndate:Fri, 24 May 2013 00:00:00 GMT\n"
     "host:examplebucket.s3.amazonaws.com\n"
     "x-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072\n"
     "x-amz-date:20130524T000000Z\nx-amz-storage-class:REDUCED_REDUNDANCY\n\n"
     "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class\n"
     "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
     S3_CRED "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, "
             "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"},
    /* A parameter without a value, as ?uploads is. */
    {"S3 GET Bucket lifecycle",
     S3,
     {"GET", "/", "lifecycle", s3_plain, 3, NULL, 0, EMPTY_SHA, true},
     S3_SIGNED,
     "GET\n/\nlifecycle=\nhost:examplebucket.s3.amazonaws.com\nx-amz-content-sha256:" EMPTY_SHA
     "\nx-amz-date:20130524T000000Z\n\n" S3_SIGNED "\n" EMPTY_SHA,
     S3_CRED "SignedHeaders=" S3_SIGNED ", "
             "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
    {"S3 GET Bucket (List Objects)",
     S3,
     {"GET", "/", "prefix=J&max-keys=2", s3_plain, 3, NULL, 0, EMPTY_SHA, true},
     S3_SIGNED,
     NULL,
     S3_CRED "SignedHeaders=" S3_SIGNED ", "
             "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"},
};

/* Each case signs to what AWS published, and what is signed verifies: the
 * verifier, handed the header the signer made, computes the same signature. */
static void test_signing_matches_aws(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(signing_cases) / sizeof(signing_cases[0]); i++) {
        const struct signing_case *c = &signing_cases[i];
        print_message("%s\n", c->name);
        if (c->canonical != NULL) {
            char *canonical = sigv4_canonical_request(&c->req, c->signed_headers);
            assert_non_null(canonical);
            assert_string_equal(canonical, c->canonical);
            free(canonical);
        }
        char *auth = sigv4_authorization(&c->req, c->signed_headers, c->amz_date, c->signer);
        assert_non_null(auth);
        assert_string_equal(auth, c->authorization);
        check_signature(&c->req, auth, c->amz_date, c->signer->secret,
                        strstr(c->authorization, "Signature=") + strlen("Signature="));
        free(auth);
    }
}

/* A stated payload hash is signed instead of the payload's own; without a
 * signed header there is nothing to sign; the encoding a client puts in a
 * URL is the canonical one. */
static void test_signing_inputs(void **state)
{
    (void)state;
    struct sigv4_request req = {"PUT", "/b/k", NULL, s3_plain, 3, "body", 4, EMPTY_SHA, true};
    char *c = sigv4_canonical_request(&req, S3_SIGNED);
    assert_non_null(c);
    assert_non_null(strstr(c, "\n" S3_SIGNED "\n" EMPTY_SHA));
    free(c);
    req.payload_hash = NULL;
    c = sigv4_canonical_request(&req, S3_SIGNED);
    assert_non_null(c); /* SHA-256 of "body" */
    assert_non_null(
        strstr(c, "\n230d8358dc8e8890b4c58deeb62912ee2f20357ae92a5cc861b98e68fe31acb5"));
    free(c);
    assert_null(sigv4_authorization(&req, "host;range;x-amz-date", S3_AT, &s3_signer));

    char *e = sigv4_uri_encode("snap 1/shard-0003.rdb.gz~$", true);
    assert_string_equal(e, "snap%201/shard-0003.rdb.gz~%24");
    free(e);
    e = sigv4_uri_encode("a/b+c=", false);
    assert_string_equal(e, "a%2Fb%2Bc%3D");
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_documented_example),  cmocka_unit_test(test_form_post),
        cmocka_unit_test(test_query_is_canonical),  cmocka_unit_test(test_headers),
        cmocka_unit_test(test_refused_headers),     cmocka_unit_test(test_dates),
        cmocka_unit_test(test_signing_matches_aws), cmocka_unit_test(test_signing_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
