/* guarded.h -- the guarded settings of a running engine (engine_config.h
 * says which and why): read with CONFIG GET, compared by digest with what
 * Cairn rendered, and put back with CONFIG SET. */
#ifndef CAIRN_ENGINE_GUARDED_H
#define CAIRN_ENGINE_GUARDED_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "crypto.h"
#include "engine_config.h"
#include "resp.h"

/* The digest of settings, whatever their order: the same names with the
 * same values give the same digest. Pure. */
void engine_guarded_digest(const struct engine_setting *s, size_t n,
                           unsigned char out[CRYPTO_SHA256_LEN]);

/* The digest of a reply to CONFIG GET (name, value, ... as an array, or a
 * map), as engine_guarded_digest() of the same pairs. False for another
 * reply. Pure. */
bool engine_guarded_reply_digest(const redisReply *reply, unsigned char out[CRYPTO_SHA256_LEN]);

/* Put want back on the engine c is logged in to as ENGINE_ADMIN_USER:
 * CONFIG GET the names, CONFIG SET each that differs. Returns how many were
 * set, their names in changed (space-separated), or -1 with err. */
int engine_guarded_restore(struct resp_conn *c, const struct engine_setting *want, size_t n,
                           char *changed, size_t changedsize, char *err, size_t errsize);

#endif
