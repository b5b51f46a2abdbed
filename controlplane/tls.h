/* tls.h -- cairnd's certificate authority and its own HTTPS certificate.
 *
 * The authority is one per installation: the first cairnd (or `cairnd
 * ca-certificate`) that finds none in the database makes it (EC P-256,
 * valid TLS_CA_DAYS), its key sealed with cairnd's secret key; every
 * cairnd sharing the database and the key loads the same one. Clients
 * trust Cairn by its certificate: `GET /v1/ca-certificate`. */
#ifndef CAIRN_TLS_H
#define CAIRN_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "app.h"
#include "x509.h"

#define TLS_CA_DAYS     3650
#define TLS_SERVER_DAYS 397 /* cairnd issues itself a new one at each start */

/* The installation's authority, made if there is none yet; NULL with err
 * (no secret key, the database, a key sealed with another secret key). */
struct x509_ca *tls_ca_open(struct app *app, char *err, size_t errsize);

/* cairnd's HTTPS certificate and key (PEM, the caller frees both): read
 * from --tls-cert-file and --tls-key-file when given, else issued by ca
 * for --tls-names (default: the listen address, localhost and this host's
 * name). False with err. */
bool tls_server_pems(const struct app *app, const struct x509_ca *ca, char **cert_pem,
                     char **key_pem, char *err, size_t errsize);

#endif
