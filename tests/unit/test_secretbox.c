/* test_secretbox.c -- sealing secrets at rest (lib/secretbox.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "secretbox.h"

static const unsigned char key[SECRETBOX_KEY_LEN] = "0123456789abcdef0123456789abcdef";

static void test_round_trip(void **state)
{
    const char *secret = "a strong engine password";
    size_t len = strlen(secret);
    unsigned char box[64 + SECRETBOX_OVERHEAD], out[64];
    (void)state;

    secretbox_seal(key, secret, len, "orders", box);
    assert_true(secretbox_open(key, box, len + SECRETBOX_OVERHEAD, "orders", out));
    assert_memory_equal(out, secret, len);
}

static void test_refuses_other_label_key_or_tampering(void **state)
{
    unsigned char box[8 + SECRETBOX_OVERHEAD], out[8];
    unsigned char other[SECRETBOX_KEY_LEN];
    (void)state;

    memcpy(other, key, sizeof(other));
    other[0] ^= 1;
    secretbox_seal(key, "password", 8, "orders", box);
    assert_false(secretbox_open(key, box, sizeof(box), "carts", out));
    assert_false(secretbox_open(other, box, sizeof(box), "orders", out));
    box[SECRETBOX_NONCE_LEN] ^= 0x40;
    assert_false(secretbox_open(key, box, sizeof(box), "orders", out));
    assert_false(secretbox_open(key, box, SECRETBOX_OVERHEAD - 1, "orders", out));
}

static void test_nonces_differ(void **state)
{
    unsigned char a[4 + SECRETBOX_OVERHEAD], b[4 + SECRETBOX_OVERHEAD];
    (void)state;
    secretbox_seal(key, "same", 4, "x", a);
    secretbox_seal(key, "same", 4, "x", b);
    assert_memory_not_equal(a, b, sizeof(a));
}

static void test_key_file_created_once_then_read(void **state)
{
    char dir[] = "/tmp/cairn-secretbox-XXXXXX", path[64], err[256];
    unsigned char k1[SECRETBOX_KEY_LEN], k2[SECRETBOX_KEY_LEN];
    struct stat st;
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/key", dir);
    assert_false(secretbox_key_load(path, false, k1, err, sizeof(err)));
    assert_non_null(strstr(err, path));
    assert_true(secretbox_key_load(path, true, k1, err, sizeof(err)));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, SECRETBOX_KEY_LEN);
    assert_true(secretbox_key_load(path, true, k2, err, sizeof(err)));
    assert_memory_equal(k1, k2, SECRETBOX_KEY_LEN);
    FILE *f = fopen(path, "a");
    fputc('x', f);
    fclose(f);
    assert_false(secretbox_key_load(path, false, k2, err, sizeof(err)));
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refuses_other_label_key_or_tampering),
        cmocka_unit_test(test_nonces_differ),
        cmocka_unit_test(test_key_file_created_once_then_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
