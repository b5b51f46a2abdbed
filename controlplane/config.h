/* config.h -- cairnd's settings from flags and the environment (flags win). */
#ifndef CAIRN_CONFIG_H
#define CAIRN_CONFIG_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "app.h"
#include "usage.h"

/* Fill cfg with defaults, then override from CAIRN_* variables. Returns
 * false with a message naming the variable when one is malformed. */
bool config_from_env(struct config *cfg, char *err, size_t errsize);

/* Apply one flag (long name without dashes, and its value; NULL for a flag
 * without one, like --no-migrate). Returns false with a message when the
 * value is malformed or the flag unknown. */
bool config_set(struct config *cfg, const char *flag, const char *value, char *err, size_t errsize);

/* getopt_long() options for every setting's flag (each reported as 0, to
 * be passed to config_set() by its name), then the n of extra (flags that
 * are not settings), then the zero entry that ends them. Free with free(). */
struct option *config_options(const struct option *extra, size_t n);

/* Append every setting's flag to a usage line: "[--listen HOST:PORT]". */
void config_usage_flags(struct usage *u);

/* Write the paragraph that lists the settings' environment variables. */
void config_usage_env(FILE *out);

/* Split "host:port" or "[v6]:port" into cfg. Pure. */
bool config_parse_listen(struct config *cfg, const char *text);

#endif
