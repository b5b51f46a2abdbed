/* page.h -- list pagination: page sizes and opaque page tokens.
 *
 * Lists are keyset-paginated. A page token wraps the sort key of the last
 * item returned, together with the name of the list it belongs to, in
 * base64url; a token is only accepted by the list that issued it, and its
 * key is checked for shape before it reaches SQL. */
#ifndef CAIRN_PAGE_H
#define CAIRN_PAGE_H

#include <stdbool.h>
#include <stddef.h>

#define PAGE_SIZE_DEFAULT 100
#define PAGE_SIZE_MAX     1000
#define PAGE_KEY_MAX      128

/* The shape of a list's sort key. */
enum page_key {
    PAGE_KEY_INT,        /* "42" */
    PAGE_KEY_TIME_UUID,  /* "<RFC 3339 time>|<uuid>" */
    PAGE_KEY_TIME_HEX12, /* "<RFC 3339 time>|<12 hex digits>" */
    PAGE_KEY_NAME,       /* a host name: 1..63 of [A-Za-z0-9._-] */
};

struct page {
    int size;
    bool has_after;
    char after[PAGE_KEY_MAX]; /* the key to continue after */
};

/* Parse page_size (NULL for the default). Returns false and writes a message
 * when it is not an integer in 1..PAGE_SIZE_MAX. Pure. */
bool page_size_parse(const char *text, int *size, char *msg, size_t msgsize);

/* Encode key (shorter than PAGE_KEY_MAX) for list into out (room for
 * PAGE_TOKEN_MAX bytes). Pure. */
#define PAGE_TOKEN_MAX 256
void page_token_encode(const char *list, const char *key, char *out);

/* Decode token for list into key (PAGE_KEY_MAX bytes); false when it is not
 * a token this list issued or its key has the wrong shape. Pure. */
bool page_token_decode(const char *token, const char *list, enum page_key shape, char *key);

/* Whether s is a canonical lower- or upper-case hyphenated UUID. Pure. */
bool page_is_uuid(const char *s);

/* Build the text of a list reply {"<name>": items, "next_page_token": ...}
 * around items, the JSON text of an array; takes ownership of items and
 * returns a new string. next_key is the key of the last item when more
 * exist, or NULL. */
char *page_envelope(const char *name, char *items, const char *list, const char *next_key);

#endif
