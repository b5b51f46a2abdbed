/* users.h -- Cairn's engine users on a running engine (engine_config.h
 * says which users and why): given to it with ACL SETUSER, every other user
 * removed, replication pointed at its user; and a digest of ACL LIST, by
 * which the agent notices a change made behind Cairn's back. */
#ifndef CAIRN_ENGINE_USERS_H
#define CAIRN_ENGINE_USERS_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "crypto.h"
#include "engine_config.h"
#include "resp.h"

/* Give the engine c is logged in to (as a user who may: ENGINE_ADMIN_USER,
 * or the default user of an engine rendered before the users existed)
 * spec's users, exactly: each set afresh (ACL SETUSER name reset ...),
 * every other user deleted, and replication authenticating as
 * ENGINE_REPLICATION_USER. The tenant users get their access string and
 * the engine's cap (access.h); one whose rules the engine refuses is left
 * out and named in warn ("" when none was). Idempotent. False with err on
 * the first other failure (what was done before it stays). */
bool engine_users_apply(struct resp_conn *c, const struct engine_config_spec *spec, char *warn,
                        size_t warnsize, char *err, size_t errsize);

/* The digest of a reply to ACL LIST (an array of strings): the same set of
 * users with the same rules gives the same digest. False for another
 * reply. Pure. */
bool engine_users_digest(const redisReply *reply, unsigned char out[CRYPTO_SHA256_LEN]);

#endif
