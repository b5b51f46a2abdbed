/* x509.h -- the small certificate authority cairnd runs (OpenSSL): one EC
 * P-256 key and self-signed certificate, and the leaf certificates it
 * issues -- cairnd's own HTTPS certificate, and the engines' when their
 * traffic is encrypted. Everything is exchanged as PEM text.
 *
 * Leaves carry their names as subjectAltName (an IP address as iPAddress,
 * anything else as dNSName; the first is also the subject's CN), are good
 * for both serverAuth and clientAuth (an engine is a client of its primary
 * and of its cluster bus peers), and start five minutes in the past, for
 * clocks a little apart. */
#ifndef CAIRN_X509_H
#define CAIRN_X509_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct x509_ca;

/* A new authority named name, valid days: its certificate and private key
 * as PEM (the caller frees both). False with err. */
bool x509_ca_create(const char *name, int days, char **cert_pem, char **key_pem, char *err,
                    size_t errsize);

/* An authority from its PEM certificate and key (which must match); NULL
 * with err. Free with x509_ca_free(). */
struct x509_ca *x509_ca_load(const char *cert_pem, const char *key_pem, char *err, size_t errsize);
void x509_ca_free(struct x509_ca *ca);

/* The authority's certificate as PEM (owned by ca). */
const char *x509_ca_cert_pem(const struct x509_ca *ca);

/* A new key and a certificate for names[0..n-1] (1 to 16 names of at most
 * 253 characters) signed by ca, valid days, as PEM (the caller frees both).
 * False with err. */
bool x509_issue(const struct x509_ca *ca, const char *const *names, size_t n, int days,
                char **cert_pem, char **key_pem, char *err, size_t errsize);

/* When the PEM certificate stops being valid; false when it does not
 * parse. */
bool x509_not_after(const char *cert_pem, time_t *out);

#endif
