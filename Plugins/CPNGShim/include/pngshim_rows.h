// A sequential PNG row reader for shrink-on-load (see pngshim.h for the error-handling rule: every setjmp sits in
// the function that runs the whole libpng call, so a longjmp only unwinds C frames).

#ifndef PNGSHIM_ROWS_H
#define PNGSHIM_ROWS_H

#include <stddef.h>
#include <stdint.h>

/// Reads the rows of a non-interlaced PNG one strip at a time, with the transforms of the full decode (8 bits per
/// channel, palette and tRNS expanded, gray with alpha as RGBA, sRGB output gamma), so a caller can reduce them as
/// they come and never hold the whole image.
typedef struct pngshim_rows pngshim_rows;

/// Opens a reader over `data` (not copied: it must outlive the reader) and reads the header.
///
/// Returns PNGSHIM_OK with `*out` set, or an error status (PNGSHIM_TOO_LARGE over `max_pixels`, PNGSHIM_ERROR for
/// an interlaced image or a libpng error) with `message` filled and `*out` NULL.
int pngshim_rows_open(const unsigned char *data, size_t size, uint64_t max_pixels, pngshim_rows **out,
                      char *message, size_t message_capacity);

/// Output geometry: `channels` is 1 (gray), 3 (RGB) or 4 (RGBA), rows are `width * channels` bytes.
void pngshim_rows_geometry(const pngshim_rows *reader, uint32_t *width, uint32_t *height, int *channels);

/// Decodes the next `count` rows into `pixels`, `bytes_per_row` apart. Returns PNGSHIM_OK, or an error status
/// (also for reading past the last row); once an error was returned, every later call returns it again.
int pngshim_rows_read(pngshim_rows *reader, unsigned char *pixels, size_t bytes_per_row, uint32_t count);

/// The last error message (empty when none).
const char *pngshim_rows_message(const pngshim_rows *reader);

/// Frees the reader (NULL is allowed).
void pngshim_rows_destroy(pngshim_rows *reader);

#endif
