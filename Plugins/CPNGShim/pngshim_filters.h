// PNG row filters (PNG spec §9) for 8-bit samples, both ways: the decoder's reconstruction and the encoder's
// filtering with its choice of filter. Private to the shim (not in include/).

#ifndef PNGSHIM_FILTERS_H
#define PNGSHIM_FILTERS_H

#include <stddef.h>
#include <stdint.h>

/// Reconstructs one row in place: `row` holds the filtered bytes (without the filter-type byte), `prev` the
/// previous reconstructed row of the same image or pass, NULL for the first row (all zero, as the spec says).
/// `bpp` is bytes per pixel, 1 to 4. Returns 0, or -1 for a filter type other than 0-4.
int pngshim_unfilter_row(int filter, unsigned char *row, const unsigned char *prev, size_t row_bytes, int bpp);

/// Reconstructs `count` consecutive rows in place: row i's filter-type byte is at `first + i * stride`, its
/// `row_bytes` bytes follow; `prev` is the reconstructed row above the first (NULL for an image's or pass's first
/// row). Returns 0, or -1 at the first row with a filter type other than 0-4.
int pngshim_unfilter_rows(unsigned char *first, size_t stride, const unsigned char *prev, uint32_t count,
                          size_t row_bytes, int bpp);

/// How the encoder picks each row's filter.
enum {
    /// Every row filtered with filter type `mode` (0 none, 1 sub, 2 up, 3 average, 4 Paeth).
    PNGSHIM_FILTER_FIXED_MAX = 4,
    /// Per row, the filter whose output has the smallest sum of absolute values (as signed bytes): the
    /// heuristic of the PNG spec and libpng's default.
    PNGSHIM_FILTER_ADAPTIVE = 5,
};

/// Filters one row: writes the filter-type byte then `row_bytes` filtered bytes to `out`. `prev` is the previous
/// row of the image (NULL for the first). `scratch` holds 4 * `row_bytes` bytes (used by the adaptive mode).
/// Returns the filter type written.
int pngshim_filter_row(int mode, const unsigned char *row, const unsigned char *prev, size_t row_bytes, int bpp,
                       unsigned char *out, unsigned char *scratch);

#endif
