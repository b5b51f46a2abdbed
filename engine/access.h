/* access.h -- the access strings of a cluster's tenant users
 * (POST /v1/clusters/{id}/users): ACL rules as Valkey and Redis write them,
 * limited to what says which keys, channels and commands a user may touch.
 *
 * Three checks, from the cheapest: engine_access_check() reads the words
 * (pure; cairnd refuses a request with its message); engine_access_known()
 * asks a live engine whether every command and category named exists there;
 * engine_access_cap() computes, on the engine that will hold the user, the
 * rules appended to every tenant user's own: one "-name" for each command of
 * @admin and @dangerous that ENGINE_TENANT_ACCESS does not give back. Being
 * last, they win over anything the user's string allows, so no access string
 * reaches beyond what the cluster's AUTH token can do. */
#ifndef CAIRN_ENGINE_ACCESS_H
#define CAIRN_ENGINE_ACCESS_H

#include <stdbool.h>
#include <stddef.h>

#include "resp.h"

#define ENGINE_ACCESS_MAX      4096 /* bytes in an access string */
#define ENGINE_ACCESS_WORDS    256  /* rules in one */
#define ENGINE_ACCESS_NAME_MAX 64   /* a command, subcommand or category name */

/* Whether access is an access string a tenant may be given: rules separated
 * by spaces, each one of
 *
 *   on  off                                    the user may log in, or not
 *   ~pattern  %R~pattern  %W~pattern  %RW~pattern  allkeys  resetkeys
 *   &pattern  allchannels  resetchannels
 *   +@category  -@category  allcommands  nocommands
 *   +command  -command  +command|subcommand  -command|subcommand
 *
 * Passwords (>, <, #, !, nopass, resetpass) are refused -- they are given
 * as the user's passwords, never in its access --, as are reset and
 * selectors. False with "..." in msg naming the first rule at fault. Pure. */
bool engine_access_check(const char *access, char *msg, size_t msgsize);

enum engine_access_known {
    ENGINE_ACCESS_KNOWN,     /* every name exists on the engine */
    ENGINE_ACCESS_UNKNOWN,   /* msg names one that does not */
    ENGINE_ACCESS_UNCHECKED, /* the engine could not be asked: msg says why */
};

/* Ask the engine c is logged in to (as Cairn's user) whether every command,
 * subcommand and category access names exists on it (COMMAND INFO, ACL
 * CAT). access must pass engine_access_check(). */
enum engine_access_known engine_access_known(struct resp_conn *c, const char *access, char *msg,
                                             size_t msgsize);

/* The rules that cap a tenant user on the engine c is logged in to: a new
 * string (free it) of space-separated "-command" and "-command|subcommand",
 * or NULL with err when the engine cannot list its @admin and @dangerous
 * commands. */
char *engine_access_cap(struct resp_conn *c, char *err, size_t errsize);

#endif
