// Small C shim around libpng's setjmp/longjmp error handling (DESIGN.md §7).
//
// libpng reports errors by longjmp. Every function here calls setjmp *and* runs the whole libpng operation
// inside the same C frame, so a longjmp never crosses a Swift frame. Each function returns a status code; the
// Swift side maps it to ImageError in one place.

#ifndef PNGSHIM_H
#define PNGSHIM_H

#include <stddef.h>
#include <stdint.h>

/// Status codes shared by every shim function.
enum {
    PNGSHIM_OK = 0,          ///< Success; for the progressive reader: more bytes needed.
    PNGSHIM_DONE = 1,        ///< Progressive reader: the image ended (IEND seen).
    PNGSHIM_ERROR = -1,      ///< libpng reported an error; see the message.
    PNGSHIM_TOO_LARGE = -2,  ///< The header declares more pixels than the caller's budget.
    PNGSHIM_NO_MEMORY = -3,  ///< An allocation failed.
};

/// Bytes produced by the encoder; free with `pngshim_buffer_free`.
typedef struct pngshim_buffer {
    unsigned char *data;
    size_t size;
    size_t capacity;
} pngshim_buffer;

/// Frees the bytes of a buffer and zeroes it.
void pngshim_buffer_free(pngshim_buffer *buffer);

/// Encodes 8-bit pixels (`color_type` is a PNG_COLOR_TYPE_* value without palette) into `out`.
///
/// `level` is the zlib level 0-9, `filters` a PNG_FILTER_* mask (0 keeps libpng's default), `interlace` 1 for
/// Adam7. `icc`/`icc_length` (may be NULL/0) is written as an iCCP chunk when libpng accepts the profile.
/// Returns PNGSHIM_OK or an error status with `message` filled (NUL-terminated, truncated to `message_capacity`).
int pngshim_encode(const unsigned char *pixels, uint32_t width, uint32_t height, size_t bytes_per_row,
                   int color_type, int level, int filters, int interlace, const unsigned char *icc,
                   size_t icc_length, pngshim_buffer *out, char *message, size_t message_capacity);

/// Reads the chunks before the image data and copies the iCCP profile (if any) into a malloc'd buffer.
///
/// Returns PNGSHIM_OK with `*profile` NULL when there is no profile, PNGSHIM_OK with `*profile` set (free it with
/// `free`) when there is one, or an error status.
int pngshim_read_iccp(const unsigned char *data, size_t size, unsigned char **profile, size_t *profile_length);

/// The CRC-32 of `length` bytes continued from `crc` (0 to start), as PNG chunks carry it (zlib's `crc32_z`).
uint32_t pngshim_crc32(uint32_t crc, const unsigned char *bytes, size_t length);

/// An incremental (progressive) PNG reader built on png_process_data.
typedef struct pngshim_reader pngshim_reader;

/// Creates a reader that refuses images over `max_pixels`. NULL when out of memory.
pngshim_reader *pngshim_reader_create(uint64_t max_pixels);

/// Frees the reader and its pixels.
void pngshim_reader_destroy(pngshim_reader *reader);

/// Feeds the next `size` bytes. Returns PNGSHIM_OK (more needed), PNGSHIM_DONE or an error status; once an error
/// was returned, every later call returns it again.
int pngshim_reader_feed(pngshim_reader *reader, const unsigned char *data, size_t size);

/// The last error message (empty when none).
const char *pngshim_reader_message(const pngshim_reader *reader);

/// Output geometry once the header was read: returns 1 and fills the fields, or 0 before the header.
///
/// `channels` is 1 (gray), 3 (RGB) or 4 (RGBA): the same layout the full decoder chooses.
int pngshim_reader_geometry(const pngshim_reader *reader, uint32_t *width, uint32_t *height, int *channels,
                            size_t *bytes_per_row);

/// The output pixels (`bytes_per_row * height` bytes, rows not yet decoded are zero); NULL before the header.
const unsigned char *pngshim_reader_pixels(const pngshim_reader *reader);

/// How many row callbacks delivered pixels so far (counts rows of every interlace pass).
uint64_t pngshim_reader_rows_delivered(const pngshim_reader *reader);

#endif
