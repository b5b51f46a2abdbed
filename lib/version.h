/* version.h -- Cairn's version, one for cairnd and cairn-agent: they are
 * released together, and an agent reports it when it registers. */
#ifndef CAIRN_VERSION_H
#define CAIRN_VERSION_H

#define CAIRN_VERSION "0.1.0"

#endif
