/* sentinel_int.h -- what the two halves of the Sentinel-compatible
 * listener share: its state (sentinel.c runs the connections and the loop)
 * and the commands it answers (sentinel_commands.c). Not for other
 * modules: the public interface is sentinel.h. */
#ifndef CAIRN_SENTINEL_INT_H
#define CAIRN_SENTINEL_INT_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app.h"

/* An error reply quotes at most this much of a client's argument. */
#define SENTINEL_QUOTE_MAX 64
/* What HELLO says the server is: the Sentinel protocol of this version. */
#define SENTINEL_REPORTED_VERSION "7.0.0"

struct client {
    int fd;
    redisReader *reader; /* bounded by sentinel_request_limits */
    char *out;
    size_t outlen;
    int64_t connected_us; /* when it was accepted */
    int64_t active_us;    /* when its last request was answered */
    bool more;            /* a complete request may wait in its reader */
    char cluster[48];     /* the cluster its AUTH opened, "" before */
    bool subscribed;
    char primary[300]; /* "ip port" last told to a subscriber, "" unknown */
};

/* A group's primary as read once in a round of watch_primaries(). */
struct watched {
    const char *cluster;
    bool known;
    char primary[300];
};

struct sentinel {
    struct app *app;
    int listen_fd, port;
    int wake[2]; /* self-pipe: stop */
    pthread_t thread;
    size_t max_clients, max_unauthenticated;
    struct client **clients; /* max_clients of them */
    size_t nclients;
    struct watched *watched; /* max_clients of them, for watch_primaries() */
    int64_t accept_paused_until_us;
    int64_t warned_us; /* when the last warning about refusals was logged */
};

/* Whether c has sent a valid AUTH: it may then ask about its cluster. */
bool sentinel__authenticated(const struct client *c);

/* Answer one request of c (argc arguments) into its output. */
void sentinel__dispatch(struct sentinel *s, struct client *c, size_t argc, redisReply **argv);

/* Tell each subscriber whose group's primary moved: +switch-master. */
void sentinel__watch_primaries(struct sentinel *s);

/* An error reply: before, then text (len bytes) cut to SENTINEL_QUOTE_MAX
 * with bytes outside printable ASCII shown as '?', then after. */
void sentinel__out_error_quoting(struct client *c, const char *before, const char *text, size_t len,
                                 const char *after);

#endif
