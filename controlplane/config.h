/* config.h -- cairnd's settings from flags and the environment (flags win). */
#ifndef CAIRN_CONFIG_H
#define CAIRN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "app.h"

/* Fill cfg with defaults, then override from CAIRN_* variables. Returns
 * false with a message naming the variable when one is malformed. */
bool config_from_env(struct config *cfg, char *err, size_t errsize);

/* Apply one flag (long name without dashes, and its value). Returns false
 * with a message when the value is malformed or the flag unknown. */
bool config_set(struct config *cfg, const char *flag, const char *value, char *err, size_t errsize);

/* Split "host:port" or "[v6]:port" into cfg. Pure. */
bool config_parse_listen(struct config *cfg, const char *text);

#endif
