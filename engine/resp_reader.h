/* resp_reader.h -- hiredis's RESP reader with every length bounded, for the
 * two places Cairn reads RESP from a peer it need not trust: the replies of
 * engines (engine/resp.c) and the requests of Sentinel clients
 * (controlplane/sentinel/sentinel.c).
 *
 * hiredis 0.14's reader believes what the bytes declare: "*2147483647"
 * makes it allocate an array of 2^31 slots (and free it slot by slot), a
 * "$2000000000" string is buffered for as long as bytes keep coming, and
 * every byte fed stays buffered until a reply is complete. A bounded reader
 * keeps the library's parser but refuses, before allocating, an array
 * longer or deeper than its limits, and fails once it holds more unparsed
 * bytes, or a reply holds more memory, than the limits allow:
 *
 *     redisReader *r = resp_reader_new(&limits);
 *     redisReaderFeed(r, buf, n);                      as bytes arrive
 *     while ((rc = resp_reader_next(r, &reply, err, sizeof(err))) == 1)
 *         use reply; resp_reply_free(reply);
 *     rc == -1: the peer broke a limit or the protocol; err says which; drop it
 *     resp_reader_free(r);
 *
 * A reader a hiredis context made (ctx->reader) is bounded in place with
 * resp_reader_bound() and released with resp_reader_unbound() before
 * redisFree(). */
#ifndef CAIRN_ENGINE_RESP_READER_H
#define CAIRN_ENGINE_RESP_READER_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

/* What one peer may send. Every field must be set (0 allows nothing). */
struct resp_limits {
    size_t max_elements; /* elements in one array */
    int max_depth;       /* arrays within arrays: 1 allows only flat arrays */
    size_t max_string;   /* bytes in one string (bulk, status or error) */
    size_t max_reply;    /* memory one reply tree may hold: its strings, element slots and
                            reply objects */
    size_t max_buffered; /* bytes fed but not yet part of a reply: bounds a string or line
                            still arriving */
};

/* A new reader bounded by limits, which must outlive it. Free with
 * resp_reader_free(). Never NULL (out of memory aborts). */
redisReader *resp_reader_new(const struct resp_limits *limits);

/* Free a reader from resp_reader_new() and any partial reply it holds;
 * NULL is allowed. */
void resp_reader_free(redisReader *r);

/* Bound a reader hiredis made (a context's): from now on it builds the
 * same redisReply trees, within limits (which must outlive it). Call
 * before anything is fed, and resp_reader_unbound() before the reader is
 * freed. */
void resp_reader_bound(redisReader *r, const struct resp_limits *limits);

/* Release what resp_reader_bound() attached; r stays hiredis's to free. */
void resp_reader_unbound(redisReader *r);

/* The next complete reply fed so far. Returns 1 with *reply set (free it
 * with resp_reply_free() from resp.h, or freeReplyObject()), 0 when no reply
 * is complete yet and the partial one is within the limits, -1 with a
 * message in err when the bytes are not RESP or break a limit ("array of
 * 2147483647 elements, more than 64"). After -1 the reader is spent: the
 * connection it served must be closed. */
int resp_reader_next(redisReader *r, redisReply **reply, char *err, size_t errsize);

/* The next complete request, as a RESP server reads one: an array of 1 to
 * limits->max_elements bulk strings (arguments may hold any bytes; use
 * each element's len). Returns 1 with *request set (free as a reply), 0 when
 * none is complete yet, -1 with err set as for resp_reader_next(), or when
 * a complete reply is not such an array ("request is not an array of bulk
 * strings"). */
int resp_reader_next_request(redisReader *r, redisReply **request, char *err, size_t errsize);

/* Bytes fed to r and not yet parsed into a reply. */
size_t resp_reader_buffered(const redisReader *r);

#endif
