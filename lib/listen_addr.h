/* listen_addr.h -- the address a listening socket binds: host and port
 * resolved for a passive TCP socket, shared by cairnd's HTTP and Sentinel
 * listeners. */
#ifndef CAIRN_LISTEN_ADDR_H
#define CAIRN_LISTEN_ADDR_H

#include <stddef.h>

struct addrinfo;

/* Resolve host (a name or a numeric address) and port for a socket that
 * listens for TCP. Returns the first address, which the caller frees with
 * freeaddrinfo(); NULL on failure, with "cannot resolve <what> address
 * <host>: <reason>" in err. */
struct addrinfo *listen_addr_resolve(const char *host, int port, const char *what, char *err,
                                     size_t errsize);

#endif
