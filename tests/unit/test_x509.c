/* test_x509.c -- cairnd's certificate authority (lib/x509.h): what it
 * issues verifies against it, names the right hosts, and refuses names
 * that are neither addresses nor DNS names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "x509.h"

static X509 *parse(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    assert_non_null(x);
    return x;
}

/* Whether leaf verifies against ca for purpose, and for host (NULL: any). */
static bool verifies(const char *ca_pem, const char *leaf_pem, const char *host, const char *ip)
{
    X509 *ca = parse(ca_pem), *leaf = parse(leaf_pem);
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    X509_STORE_add_cert(store, ca);
    X509_STORE_CTX_init(ctx, store, leaf, NULL);
    X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
    if (host != NULL)
        X509_VERIFY_PARAM_set1_host(param, host, 0);
    if (ip != NULL)
        X509_VERIFY_PARAM_set1_ip_asc(param, ip);
    bool ok = X509_verify_cert(ctx) == 1;
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    X509_free(ca);
    X509_free(leaf);
    return ok;
}

static void test_issue_and_verify(void **state)
{
    (void)state;
    char *ca_cert, *ca_key, *cert, *key, err[256] = "";

    assert_true(x509_ca_create("Cairn test CA", 3650, &ca_cert, &ca_key, err, sizeof(err)));
    struct x509_ca *ca = x509_ca_load(ca_cert, ca_key, err, sizeof(err));
    assert_non_null(ca);
    assert_string_equal(x509_ca_cert_pem(ca), ca_cert);

    const char *names[] = {"127.0.0.1", "localhost", "::1", "cairn.example.net"};
    assert_true(x509_issue(ca, names, 4, 90, &cert, &key, err, sizeof(err)));
    assert_non_null(strstr(key, "PRIVATE KEY"));
    assert_true(verifies(ca_cert, cert, NULL, "127.0.0.1"));
    assert_true(verifies(ca_cert, cert, NULL, "::1"));
    assert_true(verifies(ca_cert, cert, "localhost", NULL));
    assert_true(verifies(ca_cert, cert, "cairn.example.net", NULL));
    assert_false(verifies(ca_cert, cert, "other.example.net", NULL));
    assert_false(verifies(ca_cert, cert, NULL, "127.0.0.2"));

    time_t until;
    assert_true(x509_not_after(cert, &until));
    assert_in_range(until - time(NULL), 90 * 86400 - 60, 90 * 86400 + 60);
    assert_false(x509_not_after("not a certificate", &until));

    /* Another authority's certificate does not verify against this one. */
    char *other_cert, *other_key, *stray, *stray_key;
    assert_true(x509_ca_create("Other", 10, &other_cert, &other_key, err, sizeof(err)));
    struct x509_ca *other = x509_ca_load(other_cert, other_key, err, sizeof(err));
    assert_true(x509_issue(other, names, 1, 1, &stray, &stray_key, err, sizeof(err)));
    assert_false(verifies(ca_cert, stray, NULL, "127.0.0.1"));
    /* Nor does the authority's key load with another's certificate. */
    assert_null(x509_ca_load(ca_cert, other_key, err, sizeof(err)));
    assert_non_null(strstr(err, "is not its certificate's"));
    assert_null(x509_ca_load("junk", "junk", err, sizeof(err)));

    x509_ca_free(other);
    x509_ca_free(ca);
    free(stray);
    free(stray_key);
    free(other_cert);
    free(other_key);
    free(cert);
    free(key);
    free(ca_cert);
    free(ca_key);
}

static void test_names_refused(void **state)
{
    (void)state;
    char *ca_cert, *ca_key, *cert, *key, err[256] = "";
    assert_true(x509_ca_create("Cairn test CA", 1, &ca_cert, &ca_key, err, sizeof(err)));
    struct x509_ca *ca = x509_ca_load(ca_cert, ca_key, err, sizeof(err));
    const char *bad[] = {"", "a,DNS:evil", "a b", "host\n", "x:y"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_false(x509_issue(ca, &bad[i], 1, 1, &cert, &key, err, sizeof(err)));
        assert_null(cert);
        assert_non_null(strstr(err, "1 to 16 names"));
    }
    assert_false(x509_issue(ca, bad, 0, 1, &cert, &key, err, sizeof(err)));
    x509_ca_free(ca);
    free(ca_cert);
    free(ca_key);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue_and_verify),
        cmocka_unit_test(test_names_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
