// The fast PNG paths: a reader for the common PNG (8-bit gray, gray + alpha, RGB or RGBA, no tRNS, sRGB-like
// gamma) that inflates with libdeflate and reconstructs rows with SIMD, and an encoder that filters with the
// spec's heuristic and compresses with libdeflate. No libpng, so no setjmp: every function returns a status.
//
// The reader produces exactly what the libpng paths produce for the files it accepts, and accepts a file only
// when nothing in it needs a libpng transform or check it does not repeat: anything else — another colour type
// or bit depth, tRNS, PLTE, a gamma libpng would correct, a bad CRC, an unknown critical chunk, a stream that is
// short, long or corrupt — is PNGSHIM_FALLBACK, and the caller decodes with libpng, which gives today's answer
// (pixels or error) for it. One difference remains, libdeflate's: a stream that uses the codes deflate reserves
// (distance codes 30 and 31 read as 29, literal/length codes 286-287, which zlib refuses with "invalid distance
// code" or "too many length or distance symbols") decodes when its length and Adler-32 check, where libpng
// fails. The streamed inflate is zlib's and has no such difference.

#ifndef PNGSHIM_FAST_H
#define PNGSHIM_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "pngshim.h"

/// The fast path does not apply, or stopped on data it leaves to libpng: decode with libpng instead.
enum { PNGSHIM_FALLBACK = 2 };

/// A reader of one PNG held in memory; free with `pngshim_fast_reader_destroy`.
typedef struct pngshim_fast_reader pngshim_fast_reader;

/// Opens a reader over `data` (not copied: it must outlive the reader), checking every chunk up to the end of
/// the image data (CRCs included) before anything is allocated.
///
/// Images over `max_pixels` return PNGSHIM_TOO_LARGE. An image whose inflated data (rows with their filter
/// bytes) fits in `whole_limit` bytes is inflated at once with libdeflate; a larger one streams through zlib a
/// strip at a time, so only a strip is held (an interlaced image larger than the limit is PNGSHIM_FALLBACK: its
/// rows are only complete after the last pass). Returns PNGSHIM_OK with `*out` set, PNGSHIM_FALLBACK,
/// PNGSHIM_TOO_LARGE or PNGSHIM_NO_MEMORY, with `*out` NULL unless PNGSHIM_OK.
int pngshim_fast_reader_open(const unsigned char *data, size_t size, uint64_t max_pixels, size_t whole_limit,
                             pngshim_fast_reader **out);

/// Output geometry: `channels` is 1 (gray), 3 (RGB) or 4 (RGBA; gray + alpha is widened to RGBA, as libpng's
/// paths do). `whole` is 1 when the image was inflated at once.
void pngshim_fast_reader_geometry(const pngshim_fast_reader *reader, uint32_t *width, uint32_t *height,
                                  int *channels, int *whole);

/// Reconstructs the next `count` rows and points `*rows` at the first, `*stride` bytes apart; they stay valid
/// until the next call. Returns PNGSHIM_OK, or PNGSHIM_FALLBACK when the data turned out to be something the
/// libpng path must judge (a bad filter type, a short, long or corrupt stream): the caller starts again with
/// libpng. Every call after a failure returns it again.
int pngshim_fast_reader_read(pngshim_fast_reader *reader, uint32_t count, const unsigned char **rows,
                             size_t *stride);

/// Bytes the reader holds now: the inflated image (one-shot mode) or its strip and last row (stream mode), plus
/// any rows it widened or assembled.
size_t pngshim_fast_reader_held_bytes(const pngshim_fast_reader *reader);

/// Frees the reader (NULL is allowed).
void pngshim_fast_reader_destroy(pngshim_fast_reader *reader);

/// Encodes 8-bit pixels with `channels` 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA), not interlaced, no
/// ancillary chunk, into `out` (free with `pngshim_buffer_free`).
///
/// `filter_mode` is 0-4 for one filter type on every row or 5 for the per-row heuristic (smallest sum of
/// absolute residuals); `level` is libdeflate's compression level, 1-12, or 0 to pick by content from the share
/// of zero bytes after filtering: 9 from four fifths (drawings, text, flat colour), 6 from half (photographs with
/// large smooth areas, where 9 is many times slower), else 1 (photographs gain little from more).
/// Returns PNGSHIM_OK, PNGSHIM_NO_MEMORY, or PNGSHIM_ERROR with `message` filled.
int pngshim_fast_encode(const unsigned char *pixels, uint32_t width, uint32_t height, size_t bytes_per_row,
                        int channels, int level, int filter_mode, pngshim_buffer *out, char *message,
                        size_t message_capacity);

#endif
