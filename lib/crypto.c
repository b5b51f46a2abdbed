/* crypto.c -- thin, safe wrappers over OpenSSL plus hex/base64url text. */
#include "crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>

static const char b64url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void crypto_random(void *buf, size_t n)
{
    if (RAND_bytes(buf, (int)n) != 1) {
        fprintf(stderr, "cairn: the random number generator failed\n");
        abort();
    }
}

void crypto_sha256(const void *data, size_t len, unsigned char out[CRYPTO_SHA256_LEN])
{
    unsigned int outlen = CRYPTO_SHA256_LEN;
    if (EVP_Digest(data, len, out, &outlen, EVP_sha256(), NULL) != 1) {
        fprintf(stderr, "cairn: SHA-256 failed\n");
        abort();
    }
}

void crypto_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                        unsigned char out[CRYPTO_SHA256_LEN])
{
    unsigned int outlen = CRYPTO_SHA256_LEN;
    if (HMAC(EVP_sha256(), key, (int)key_len, data, len, out, &outlen) == NULL) {
        fprintf(stderr, "cairn: HMAC-SHA-256 failed\n");
        abort();
    }
}

bool crypto_equal(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}

void crypto_hex(const void *data, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 0xf];
    }
    out[2 * n] = '\0';
}

int crypto_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool crypto_unhex(const char *in, size_t n, unsigned char *out)
{
    for (size_t i = 0; i < n; i++) {
        int hi = crypto_hex_digit(in[2 * i]), lo = hi < 0 ? -1 : crypto_hex_digit(in[2 * i + 1]);
        if (lo < 0)
            return false;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return true;
}

size_t crypto_b64url_len(size_t n)
{
    return (n / 3) * 4 + (n % 3 ? n % 3 + 1 : 0);
}

void crypto_b64url(const void *data, size_t n, char *out)
{
    const unsigned char *p = data;
    size_t o = 0, i = 0;

    for (; i + 2 < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        out[o++] = b64url_alphabet[v >> 18 & 63];
        out[o++] = b64url_alphabet[v >> 12 & 63];
        out[o++] = b64url_alphabet[v >> 6 & 63];
        out[o++] = b64url_alphabet[v & 63];
    }
    if (n - i == 1) {
        unsigned v = (unsigned)p[i] << 16;
        out[o++] = b64url_alphabet[v >> 18 & 63];
        out[o++] = b64url_alphabet[v >> 12 & 63];
    } else if (n - i == 2) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
        out[o++] = b64url_alphabet[v >> 18 & 63];
        out[o++] = b64url_alphabet[v >> 12 & 63];
        out[o++] = b64url_alphabet[v >> 6 & 63];
    }
    out[o] = '\0';
}

static int b64url_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

long crypto_b64url_decode(const char *in, size_t len, unsigned char *out)
{
    unsigned acc = 0;
    int bits = 0;
    long o = 0;

    while (len > 0 && in[len - 1] == '=')
        len--;
    if (len % 4 == 1)
        return -1;
    for (size_t i = 0; i < len; i++) {
        int v = b64url_value(in[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6 | (unsigned)v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits & 0xff);
        }
    }
    return o;
}
