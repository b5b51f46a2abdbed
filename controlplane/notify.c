/* notify.c -- the LISTEN thread: PostgreSQL notifications to http_wake(),
 * credential changes to the token cache, which it trusts only while this
 * thread listens, and engines in trouble to the monitor. */
#include "notify.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "http.h"
#include "log.h"
#include "monitor.h"
#include "store.h"
#include "token_cache.h"
#include "xalloc.h"

#define RECONNECT_MS     500
#define POLL_INTERVAL_MS 250

struct notify {
    char *url;
    struct http_server *server;
    struct token_cache *tokens;
    struct monitor *monitor;
    pthread_t thread;
    atomic_bool stop;
};

/* Deliver every queued notification; false when the connection broke. */
static bool drain(struct notify *n, PGconn *pg)
{
    PGnotify *note;

    if (!PQconsumeInput(pg))
        return false;
    while ((note = PQnotifies(pg)) != NULL) {
        if (strcmp(note->relname, STORE_CREDENTIALS_CHANNEL) == 0)
            token_cache_forget(n->tokens, note->extra);
        else if (strcmp(note->relname, STORE_TROUBLE_CHANNEL) == 0)
            monitor_poke(n->monitor);
        else
            http_wake(n->server, note->extra[0] != '\0' ? note->extra : NULL);
        PQfreemem(note);
    }
    return true;
}

static PGconn *listen_on(const char *url)
{
    char err[512];
    PGconn *pg = db_connect(url, err, sizeof(err));

    if (pg == NULL)
        return NULL;
    if (store_hosts_listen(pg) != DB_OK || store_operations_listen(pg) != DB_OK ||
        store_credentials_listen(pg) != DB_OK || store_trouble_listen(pg) != DB_OK) {
        PQfinish(pg);
        return NULL;
    }
    return pg;
}

static void *notify_main(void *arg)
{
    struct notify *n = arg;
    PGconn *pg = NULL;
    bool warned = false;

    while (!atomic_load(&n->stop)) {
        if (pg == NULL) {
            pg = listen_on(n->url);
            if (pg == NULL) {
                if (!warned)
                    log_warn("cannot listen for desired-state changes and operation ends; "
                             "retrying",
                             NULL);
                warned = true;
                usleep(RECONNECT_MS * 1000);
                continue;
            }
            warned = false;
            token_cache_trust(n->tokens, true);
            http_wake(n->server, NULL);
        }
        struct pollfd pfd = {.fd = PQsocket(pg), .events = POLLIN};
        if (poll(&pfd, 1, POLL_INTERVAL_MS) < 0 || !drain(n, pg)) {
            /* Changes may go unheard from now on: verify everything again. */
            token_cache_trust(n->tokens, false);
            PQfinish(pg);
            pg = NULL;
        }
    }
    if (pg != NULL)
        PQfinish(pg);
    return NULL;
}

struct notify *notify_start(const char *url, struct http_server *server, struct token_cache *tokens,
                            struct monitor *monitor)
{
    struct notify *n = xcalloc(1, sizeof(*n));
    n->url = xstrdup(url);
    n->server = server;
    n->tokens = tokens;
    n->monitor = monitor;
    atomic_init(&n->stop, false);
    pthread_create(&n->thread, NULL, notify_main, n);
    return n;
}

void notify_stop(struct notify *n)
{
    atomic_store(&n->stop, true);
    pthread_join(n->thread, NULL);
    token_cache_trust(n->tokens, false);
    free(n->url);
    free(n);
}
