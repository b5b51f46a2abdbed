/* secretbox.h -- secrets at rest: AES-256-GCM with a key kept in a file
 * outside the database (engine passwords are stored sealed with it). */
#ifndef CAIRN_SECRETBOX_H
#define CAIRN_SECRETBOX_H

#include <stdbool.h>
#include <stddef.h>

#define SECRETBOX_KEY_LEN   32
#define SECRETBOX_NONCE_LEN 12
#define SECRETBOX_TAG_LEN   16
#define SECRETBOX_OVERHEAD  (SECRETBOX_NONCE_LEN + SECRETBOX_TAG_LEN)

/* Read the 32-byte key from path; when the file does not exist and create is
 * set, make one from the CSPRNG (mode 0600, written atomically). Returns
 * false with a message naming the file otherwise. */
bool secretbox_key_load(const char *path, bool create, unsigned char key[SECRETBOX_KEY_LEN],
                        char *err, size_t errsize);

/* Seal len bytes of plain, bound to aad (a NUL-terminated label such as the
 * owner's id: the sealed box opens only with the same one), into out, which
 * must hold len + SECRETBOX_OVERHEAD bytes: nonce, ciphertext, tag. */
void secretbox_seal(const unsigned char key[SECRETBOX_KEY_LEN], const void *plain, size_t len,
                    const char *aad, unsigned char *out);

/* Open a sealed box of len bytes into out (room for len - SECRETBOX_OVERHEAD
 * bytes). Returns false when it is too short, was sealed with another key or
 * label, or was altered. */
bool secretbox_open(const unsigned char key[SECRETBOX_KEY_LEN], const unsigned char *box,
                    size_t len, const char *aad, unsigned char *out);

#endif
