/* x509.c -- see x509.h. */
#include "x509.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "strbuf.h"
#include "xalloc.h"

#define NAMES_MAX    16
#define NAME_LEN_MAX 253
#define BACKDATE_S   300

struct x509_ca {
    X509 *cert;
    EVP_PKEY *key;
    char *cert_pem;
};

/* err = what, and OpenSSL's own reason when it has one; returns false. */
static bool fail(char *err, size_t errsize, const char *what)
{
    unsigned long e = ERR_get_error();
    char reason[256] = "";

    if (e != 0)
        ERR_error_string_n(e, reason, sizeof(reason));
    ERR_clear_error();
    snprintf(err, errsize, "%s%s%s", what, reason[0] != '\0' ? ": " : "", reason);
    return false;
}

static char *bio_text(BIO *b)
{
    char *data = NULL;
    long len = BIO_get_mem_data(b, &data);
    char *out = xmalloc((size_t)len + 1);

    memcpy(out, data, (size_t)len);
    out[len] = '\0';
    return out;
}

static char *cert_to_pem(X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *pem = b != NULL && PEM_write_bio_X509(b, x) == 1 ? bio_text(b) : NULL;
    BIO_free(b);
    return pem;
}

static char *key_to_pem(EVP_PKEY *k)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *pem = b != NULL && PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL) == 1
                    ? bio_text(b)
                    : NULL;
    BIO_free(b);
    return pem;
}

/* One extension from its configuration text ("critical,CA:TRUE"). */
static bool add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    bool ok = ext != NULL && X509_add_ext(x, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

/* A certificate for key, named cn, valid days from five minutes ago, with
 * a random 128-bit serial; signed later. */
static X509 *new_cert(EVP_PKEY *key, const char *cn, int days)
{
    X509 *x = X509_new();
    X509_NAME *name = X509_NAME_new();
    unsigned char serial[16];
    BIGNUM *bn = NULL;
    bool ok = x != NULL && name != NULL && RAND_bytes(serial, sizeof(serial)) == 1;

    serial[0] &= 0x7f; /* positive */
    ok = ok && (bn = BN_bin2bn(serial, sizeof(serial), NULL)) != NULL &&
         BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL && X509_set_version(x, 2) == 1 &&
         X509_gmtime_adj(X509_getm_notBefore(x), -BACKDATE_S) != NULL &&
         X509_time_adj_ex(X509_getm_notAfter(x), days, 0, NULL) != NULL &&
         X509_set_pubkey(x, key) == 1 &&
         X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
                                    0) == 1 &&
         X509_set_subject_name(x, name) == 1;
    BN_free(bn);
    X509_NAME_free(name);
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

bool x509_ca_create(const char *name, int days, char **cert_pem, char **key_pem, char *err,
                    size_t errsize)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = key != NULL ? new_cert(key, name, days) : NULL;
    X509V3_CTX ctx;
    bool ok = x != NULL && X509_set_issuer_name(x, X509_get_subject_name(x)) == 1;

    if (ok) {
        X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
        ok = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
             add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") &&
             add_ext(x, &ctx, NID_subject_key_identifier, "hash") &&
             X509_sign(x, key, EVP_sha256()) > 0;
    }
    *cert_pem = ok ? cert_to_pem(x) : NULL;
    *key_pem = ok ? key_to_pem(key) : NULL;
    ok = ok && *cert_pem != NULL && *key_pem != NULL;
    X509_free(x);
    EVP_PKEY_free(key);
    if (!ok) {
        free(*cert_pem);
        free(*key_pem);
        *cert_pem = *key_pem = NULL;
        return fail(err, errsize, "could not create the certificate authority");
    }
    return true;
}

struct x509_ca *x509_ca_load(const char *cert_pem, const char *key_pem, char *err, size_t errsize)
{
    struct x509_ca *ca = xcalloc(1, sizeof(*ca));
    BIO *cb = BIO_new_mem_buf(cert_pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);

    ca->cert = cb != NULL ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
    ca->key = kb != NULL ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
    BIO_free(cb);
    BIO_free(kb);
    if (ca->cert == NULL || ca->key == NULL) {
        fail(err, errsize, "the certificate authority's certificate or key does not parse");
    } else if (X509_check_private_key(ca->cert, ca->key) != 1) {
        fail(err, errsize, "the certificate authority's key is not its certificate's");
    } else {
        ca->cert_pem = cert_to_pem(ca->cert);
        return ca;
    }
    x509_ca_free(ca);
    return NULL;
}

void x509_ca_free(struct x509_ca *ca)
{
    if (ca == NULL)
        return;
    X509_free(ca->cert);
    EVP_PKEY_free(ca->key);
    free(ca->cert_pem);
    free(ca);
}

const char *x509_ca_cert_pem(const struct x509_ca *ca)
{
    return ca->cert_pem;
}

/* Whether name is a DNS name: letters, digits, '-' and '.', 1 to 253. */
static bool dns_name(const char *name)
{
    size_t len = strlen(name);
    return len > 0 && len <= NAME_LEN_MAX &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") == len;
}

/* "IP:a,DNS:b" for names; false when one is neither an address nor a DNS
 * name. */
static bool alt_names(const char *const *names, size_t n, struct strbuf *out)
{
    unsigned char addr[16];

    for (size_t i = 0; i < n; i++) {
        bool ip =
            inet_pton(AF_INET, names[i], addr) == 1 || inet_pton(AF_INET6, names[i], addr) == 1;
        if (!ip && !dns_name(names[i]))
            return false;
        strbuf_printf(out, "%s%s:%s", i > 0 ? "," : "", ip ? "IP" : "DNS", names[i]);
    }
    return true;
}

bool x509_issue(const struct x509_ca *ca, const char *const *names, size_t n, int days,
                char **cert_pem, char **key_pem, char *err, size_t errsize)
{
    struct strbuf san;
    X509V3_CTX ctx;

    *cert_pem = *key_pem = NULL;
    strbuf_init(&san, 256);
    if (n == 0 || n > NAMES_MAX || !alt_names(names, n, &san)) {
        free(san.p);
        snprintf(err, errsize, "a certificate needs 1 to %d names (addresses or DNS names)",
                 NAMES_MAX);
        return false;
    }
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = key != NULL ? new_cert(key, names[0], days) : NULL;
    bool ok = x != NULL && X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) == 1;
    if (ok) {
        X509V3_set_ctx(&ctx, ca->cert, x, NULL, NULL, 0);
        ok = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") &&
             add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature") &&
             add_ext(x, &ctx, NID_ext_key_usage, "serverAuth,clientAuth") &&
             add_ext(x, &ctx, NID_subject_alt_name, san.p) &&
             add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always") &&
             X509_sign(x, ca->key, EVP_sha256()) > 0;
    }
    *cert_pem = ok ? cert_to_pem(x) : NULL;
    *key_pem = ok ? key_to_pem(key) : NULL;
    ok = ok && *cert_pem != NULL && *key_pem != NULL;
    X509_free(x);
    EVP_PKEY_free(key);
    free(san.p);
    if (!ok) {
        free(*cert_pem);
        free(*key_pem);
        *cert_pem = *key_pem = NULL;
        return fail(err, errsize, "could not issue the certificate");
    }
    return true;
}

bool x509_not_after(const char *cert_pem, time_t *out)
{
    BIO *b = BIO_new_mem_buf(cert_pem, -1);
    X509 *x = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    struct tm tm;
    bool ok = x != NULL && ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1;

    if (ok)
        *out = timegm(&tm);
    X509_free(x);
    BIO_free(b);
    ERR_clear_error();
    return ok;
}
