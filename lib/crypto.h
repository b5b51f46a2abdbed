/* crypto.h -- the few cryptographic primitives Cairn needs, on OpenSSL:
 * random bytes, SHA-256 and HMAC-SHA-256, constant-time comparison, hex and
 * base64url text. */
#ifndef CAIRN_CRYPTO_H
#define CAIRN_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>

#define CRYPTO_SHA256_LEN 32

/* Fill buf with n bytes from the CSPRNG. Aborts if the generator fails:
 * handing out a predictable secret is worse than stopping. */
void crypto_random(void *buf, size_t n);

/* SHA-256 of data into out (CRYPTO_SHA256_LEN bytes). */
void crypto_sha256(const void *data, size_t len, unsigned char out[CRYPTO_SHA256_LEN]);

/* HMAC-SHA-256 of data under key into out (CRYPTO_SHA256_LEN bytes). */
void crypto_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                        unsigned char out[CRYPTO_SHA256_LEN]);

/* Compare two equal-length buffers in time independent of their contents. */
bool crypto_equal(const void *a, const void *b, size_t n);

/* Lower-case hex of n bytes into out, which must hold 2n+1 bytes. */
void crypto_hex(const void *data, size_t n, char *out);

/* The value of a hex digit (either case), or -1 for another character. */
int crypto_hex_digit(char c);

/* Decode the hex text in[0..2n) into n bytes of out. Returns false, with
 * out partly written, on a character that is not a hex digit. */
bool crypto_unhex(const char *in, size_t n, unsigned char *out);

/* base64url without padding of n bytes into out, which must hold
 * crypto_b64url_len(n)+1 bytes. */
size_t crypto_b64url_len(size_t n);
void crypto_b64url(const void *data, size_t n, char *out);

/* Decode base64url (padding optional) into out (room for len*3/4 bytes).
 * Returns the number of bytes written, or -1 on a character outside the
 * alphabet or an impossible length. */
long crypto_b64url_decode(const char *in, size_t len, unsigned char *out);

#endif
