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
#define TLS_HOST_DAYS   90  /* a host's engines' certificate, renewed 30 days before its end */

struct db_conn;

/* The installation's authority, made if there is none yet; NULL with err
 * (no secret key, the database, a key sealed with another secret key). */
struct x509_ca *tls_ca_open(struct app *app, char *err, size_t errsize);

/* cairnd's HTTPS certificate and key (PEM, the caller frees both): read
 * from --tls-cert-file and --tls-key-file when given, else issued by ca
 * for --tls-names (default: the listen address, localhost and this host's
 * name). False with err. */
bool tls_server_pems(const struct app *app, const struct x509_ca *ca, char **cert_pem,
                     char **key_pem, char *err, size_t errsize);

/* In the transaction that reads a host's desired set: give the host a new
 * certificate for its address when it runs a node of a cluster with
 * transit encryption and has none, or one that ends within 30 days (which
 * changes its desired set). Nothing without an authority. */
enum db_status tls_host_certificate(struct app *app, struct db_conn *conn, const char *host_id);

/* The host key sealed in a desired set (key_box), opened; NULL when it
 * cannot be. */
char *tls_open_host_key(struct app *app, const char *key_box_hex);

#endif
