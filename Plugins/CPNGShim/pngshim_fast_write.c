// See include/pngshim_fast.h: the fast encoder. Rows are filtered by pngshim_filters.c, the whole stream is
// compressed in one libdeflate call (zlib format), and the chunks are written here with their CRCs.

#include "pngshim_fast.h"

#include "pngshim_filters.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

// IDAT chunks of at most this many bytes: readers stream IDAT, so the size only matters to tools that hold a
// whole chunk.
#define FAST_IDAT_CHUNK ((size_t)1 << 20)

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

// Writes a chunk (length, type, data, CRC) at `p`; returns the bytes written.
static size_t put_chunk(unsigned char *p, const char *type, const unsigned char *data, size_t length) {
    put32(p, (uint32_t)length);
    memcpy(p + 4, type, 4);
    if (length > 0) memcpy(p + 8, data, length);
    put32(p + 8 + length, (uint32_t)libdeflate_crc32(0, p + 4, length + 4));
    return length + 12;
}

// The level for "balanced", by the share of zero residuals after filtering (measured on the corpus's photos and
// PNGs, 2026-11-29):
// - under half: photographs (15-35 %). Level 1: level 6 makes them 3-8 % smaller for 2.5-3 times the time,
//   level 9 4-10 % smaller for 4-23 times.
// - half to four fifths: photographs with large smooth areas (a 12 MP camera photo: 50 %), and small drawings.
//   Level 6. Level 9's lazy matching crawls over the zero runs between noise: 23 times level 1's time on that
//   photo (12.8 s against 0.55 s, where level 6 took 1.7 s and was 1 % smaller than zlib's level 6); on the
//   drawings level 9 is 10-25 % smaller than 6, a few hundred bytes.
// - four fifths or more: drawings, text, flat colour. Level 9: matches are long, so it runs at 1.5-2.5 times
//   level 1's time, and it is 1-20 % smaller than level 6.
static int content_level(const unsigned char *filtered, size_t size) {
    size_t zeros = 0;
    for (size_t i = 0; i < size; i++) zeros += filtered[i] == 0;
    if (zeros * 5 >= size * 4) return 9;
    return zeros * 2 >= size ? 6 : 1;
}

static int fail(const char *text, char *message, size_t capacity) {
    if (message != NULL && capacity > 0) {
        strncpy(message, text, capacity - 1);
        message[capacity - 1] = '\0';
    }
    return PNGSHIM_ERROR;
}

int pngshim_fast_encode(const unsigned char *pixels, uint32_t width, uint32_t height, size_t bytes_per_row,
                        int channels, int level, int filter_mode, pngshim_buffer *out, char *message,
                        size_t message_capacity) {
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    static const unsigned char color_types[5] = {0, 0, 4, 2, 6};
    out->data = NULL;
    out->size = 0;
    out->capacity = 0;
    if (pixels == NULL || width == 0 || height == 0 || width > 0x7fffffffu || height > 0x7fffffffu) {
        return fail("empty or oversized image", message, message_capacity);
    }
    if (channels < 1 || channels > 4 || filter_mode < 0 || filter_mode > PNGSHIM_FILTER_ADAPTIVE) {
        return fail("unsupported layout or filter", message, message_capacity);
    }
    if (level < 0) level = 0;
    if (level > 12) level = 12;
    size_t row_bytes = (size_t)width * (size_t)channels, filtered_size = 0;
    if (bytes_per_row < row_bytes || __builtin_mul_overflow(row_bytes + 1, (size_t)height, &filtered_size)) {
        return fail("image too large", message, message_capacity);
    }

    unsigned char *filtered = (unsigned char *)malloc(filtered_size);
    unsigned char *scratch = (unsigned char *)malloc(4 * row_bytes);
    if (filtered == NULL || scratch == NULL) {
        free(filtered);
        free(scratch);
        return PNGSHIM_NO_MEMORY;
    }
    for (uint32_t y = 0; y < height; y++) {
        const unsigned char *row = pixels + (size_t)y * bytes_per_row;
        const unsigned char *prev = y == 0 ? NULL : row - bytes_per_row;
        pngshim_filter_row(filter_mode, row, prev, row_bytes, channels, filtered + (size_t)y * (row_bytes + 1),
                           scratch);
    }
    free(scratch);
    if (level == 0) level = content_level(filtered, filtered_size);

    struct libdeflate_compressor *deflater = libdeflate_alloc_compressor(level);
    if (deflater == NULL) {
        free(filtered);
        return PNGSHIM_NO_MEMORY;
    }
    size_t bound = libdeflate_zlib_compress_bound(deflater, filtered_size);
    unsigned char *compressed = (unsigned char *)malloc(bound);
    size_t zsize = compressed != NULL ? libdeflate_zlib_compress(deflater, filtered, filtered_size, compressed, bound)
                                      : 0;
    libdeflate_free_compressor(deflater);
    free(filtered);
    if (zsize == 0) {
        free(compressed);
        return compressed == NULL ? PNGSHIM_NO_MEMORY : fail("compression failed", message, message_capacity);
    }

    size_t chunks = (zsize + FAST_IDAT_CHUNK - 1) / FAST_IDAT_CHUNK;
    size_t total = 8 + 25 + zsize + 12 * chunks + 12;
    unsigned char *file = (unsigned char *)malloc(total);
    if (file == NULL) {
        free(compressed);
        return PNGSHIM_NO_MEMORY;
    }
    size_t pos = 0;
    memcpy(file, signature, 8);
    pos += 8;
    unsigned char header[13];
    put32(header, width);
    put32(header + 4, height);
    header[8] = 8;                            // bit depth
    header[9] = color_types[channels];        // colour type
    header[10] = header[11] = header[12] = 0;  // deflate, adaptive filtering, not interlaced
    pos += put_chunk(file + pos, "IHDR", header, sizeof header);
    for (size_t offset = 0; offset < zsize; offset += FAST_IDAT_CHUNK) {
        size_t length = zsize - offset < FAST_IDAT_CHUNK ? zsize - offset : FAST_IDAT_CHUNK;
        pos += put_chunk(file + pos, "IDAT", compressed + offset, length);
    }
    pos += put_chunk(file + pos, "IEND", NULL, 0);
    free(compressed);
    out->data = file;
    out->size = pos;
    out->capacity = total;
    return PNGSHIM_OK;
}
