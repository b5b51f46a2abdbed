/* series_codec.h -- the compact form of one metric's values over a day (or
 * any run of equally spaced slots), as compaction stores them. Pure.
 *
 * Lossless to the bit. Agents' values are mostly decimals (counts, bytes,
 * percentages to two places): a series whose every value is exactly a
 * float of some integer / 10^k is kept as those integers' differences from
 * one slot to the next, zigzag varints, so a counter moving around its rate
 * or a gauge drifting costs a byte or two and a constant nothing. Other
 * series keep each value's bits XORed with the previous', byte planes
 * apart. Which slots hold a value is a bitmap (or nothing when all do).
 * Then deflate, when it makes the series smaller.
 *
 *   byte 0     SERIES_RAW or SERIES_DEFLATED; the rest is the body, deflated
 *              or not
 *   body       varint slots, byte presence (0: every slot, 1: bitmap
 *              follows, LSB first), byte mode, then by mode:
 *                SERIES_EMPTY     nothing (no slot has a value)
 *                SERIES_DECIMAL   byte k, then a zigzag varint per value:
 *                                 its integer minus the previous value's
 *                                 (0 before the first)
 *                SERIES_XOR       4 planes of one byte per value: byte b of
 *                                 (bits XOR the previous value's bits) */
#ifndef CAIRN_SERIES_CODEC_H
#define CAIRN_SERIES_CODEC_H

#include <stdbool.h>
#include <stddef.h>

enum { SERIES_RAW = 1, SERIES_DEFLATED = 2 };
enum { SERIES_EMPTY = 0, SERIES_DECIMAL = 1, SERIES_XOR = 2 };

#define SERIES_MAX_SLOTS 86400

/* Encode the n values (present[i] false: no value in slot i); returns a
 * malloc'd buffer and its length in *len. */
unsigned char *series_encode(const float *values, const bool *present, size_t n, size_t *len);

/* Decode into values[0..n) and present[0..n); slots the series does not
 * have are absent. Returns the series' slot count, or -1 when buf is not a
 * series or holds more than n slots. */
long series_decode(const unsigned char *buf, size_t len, float *values, bool *present, size_t n);

#endif
