/* listen_addr.c -- resolve the address a listening socket binds. */
#include <netdb.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "listen_addr.h"

struct addrinfo *listen_addr_resolve(const char *host, int port, const char *what, char *err,
                                     size_t errsize)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *ai = NULL;
    char service[16];

    snprintf(service, sizeof(service), "%d", port);
    int rc = getaddrinfo(host, service, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errsize, "cannot resolve %s address %s: %s", what, host, gai_strerror(rc));
        return NULL;
    }
    return ai;
}
