/* secretbox.c -- AES-256-GCM sealing on OpenSSL's EVP interface. */
#include "secretbox.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"

static bool read_key(const char *path, unsigned char key[SECRETBOX_KEY_LEN], char *err,
                     size_t errsize)
{
    unsigned char buf[SECRETBOX_KEY_LEN + 1];
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        snprintf(err, errsize, "could not open key file \"%s\": %s", path, strerror(errno));
        return false;
    }
    ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    if (n != SECRETBOX_KEY_LEN) {
        snprintf(err, errsize, "key file \"%s\" must hold exactly %d bytes", path,
                 SECRETBOX_KEY_LEN);
        return false;
    }
    memcpy(key, buf, SECRETBOX_KEY_LEN);
    return true;
}

static bool create_key(const char *path, unsigned char key[SECRETBOX_KEY_LEN], char *err,
                       size_t errsize)
{
    char tmp[4096];
    int fd;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errsize, "could not create key file \"%s\": %s", tmp, strerror(errno));
        return false;
    }
    crypto_random(key, SECRETBOX_KEY_LEN);
    bool ok = write(fd, key, SECRETBOX_KEY_LEN) == SECRETBOX_KEY_LEN && fsync(fd) == 0;
    int saved = errno;
    close(fd);
    /* link() refuses to replace a key another process made meanwhile. */
    if (ok && link(tmp, path) != 0) {
        saved = errno;
        ok = false;
    }
    unlink(tmp);
    if (!ok) {
        if (saved == EEXIST)
            return read_key(path, key, err, errsize);
        snprintf(err, errsize, "could not write key file \"%s\": %s", path, strerror(saved));
    }
    return ok;
}

bool secretbox_key_load(const char *path, bool create, unsigned char key[SECRETBOX_KEY_LEN],
                        char *err, size_t errsize)
{
    if (create && access(path, F_OK) != 0 && errno == ENOENT)
        return create_key(path, key, err, errsize);
    return read_key(path, key, err, errsize);
}

void secretbox_seal(const unsigned char key[SECRETBOX_KEY_LEN], const void *plain, size_t len,
                    const char *aad, unsigned char *out)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int n = 0;
    unsigned char *nonce = out, *body = out + SECRETBOX_NONCE_LEN;

    crypto_random(nonce, SECRETBOX_NONCE_LEN);
    if (ctx == NULL || EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce) != 1 ||
        EVP_EncryptUpdate(ctx, NULL, &n, (const unsigned char *)aad, (int)strlen(aad)) != 1 ||
        EVP_EncryptUpdate(ctx, body, &n, plain, (int)len) != 1 ||
        EVP_EncryptFinal_ex(ctx, body + n, &n) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, SECRETBOX_TAG_LEN, body + len) != 1) {
        fprintf(stderr, "cairn: AES-GCM encryption failed\n");
        abort();
    }
    EVP_CIPHER_CTX_free(ctx);
}

bool secretbox_open(const unsigned char key[SECRETBOX_KEY_LEN], const unsigned char *box,
                    size_t len, const char *aad, unsigned char *out)
{
    EVP_CIPHER_CTX *ctx;
    int n = 0;
    bool ok;

    if (len < SECRETBOX_OVERHEAD)
        return false;
    size_t body_len = len - SECRETBOX_OVERHEAD;
    const unsigned char *body = box + SECRETBOX_NONCE_LEN;
    if ((ctx = EVP_CIPHER_CTX_new()) == NULL) {
        fprintf(stderr, "cairn: out of memory for AES-GCM\n");
        abort();
    }
    ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, box) == 1 &&
         EVP_DecryptUpdate(ctx, NULL, &n, (const unsigned char *)aad, (int)strlen(aad)) == 1 &&
         EVP_DecryptUpdate(ctx, out, &n, body, (int)body_len) == 1 &&
         EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, SECRETBOX_TAG_LEN,
                             (void *)(body + body_len)) == 1 &&
         EVP_DecryptFinal_ex(ctx, out + n, &n) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}
