// See include/pngshim_fast.h: the fast reader. It parses and checks the chunks itself, inflates with libdeflate
// (whole) or zlib (streamed), reconstructs rows with pngshim_filters.c, and hands back any oddity as
// PNGSHIM_FALLBACK so libpng judges it.

#include "pngshim_fast.h"

#include "pngshim_filters.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

// libpng's default user limits (png_set_user_limits): larger images are libpng errors, so they are its to report.
#define FAST_MAX_SIDE 1000000u

// Gamma values (gAMA × 100000) that libpng leaves alone when it writes sRGB output: it corrects only when the
// file gamma differs from sRGB's 45455 by more than 5 % (PNG_GAMMA_THRESHOLD_FIXED). This window is narrower.
#define FAST_GAMMA_LOW 44000u
#define FAST_GAMMA_HIGH 47000u

static const uint8_t adam7[7][4] = {
    // x start, y start, x step, y step
    {0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2},
};

struct pngshim_fast_reader {
    const unsigned char *data;
    size_t size;
    uint32_t width;
    uint32_t height;
    int bpp;       // source bytes per pixel: 1, 2, 3 or 4
    int channels;  // output channels: 1, 3 or 4
    int interlaced;
    size_t row_bytes;      // source bytes per row of the image (without the filter byte)
    size_t filtered_size;  // the inflated stream's size
    size_t idat_start;     // offset of the first IDAT chunk
    size_t idat_bytes;     // compressed bytes in the IDAT run
    uint32_t idat_chunks;
    uint32_t next_row;
    int status;
    // Whole mode: the inflated stream, reconstructed in place as rows are asked for.
    unsigned char *filtered;
    size_t pass_offset[7];
    uint32_t pass_width[7];
    uint32_t pass_height[7];
    // Stream mode: zlib over the IDAT run, a strip of filtered rows and the last reconstructed row.
    z_stream zlib;
    int zlib_open;
    int zlib_ended;
    size_t next_chunk;     // offset of the next IDAT chunk to enter
    uint32_t chunks_left;  // IDAT chunks of the run not entered yet
    unsigned char *strip;
    size_t strip_capacity;
    unsigned char *prev;
    int have_prev;
    // Rows in the output layout when they differ from the source rows (gray + alpha widened, Adam7 assembled).
    unsigned char *out;
    size_t out_capacity;
};

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int is_letter(unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

static int grow(unsigned char **buffer, size_t *capacity, size_t needed) {
    if (needed <= *capacity) return 1;
    unsigned char *grown = (unsigned char *)realloc(*buffer, needed);
    if (grown == NULL) return 0;
    *buffer = grown;
    *capacity = needed;
    return 1;
}

void pngshim_fast_reader_destroy(pngshim_fast_reader *reader) {
    if (reader == NULL) return;
    if (reader->zlib_open) inflateEnd(&reader->zlib);
    free(reader->filtered);
    free(reader->strip);
    free(reader->prev);
    free(reader->out);
    free(reader);
}

void pngshim_fast_reader_geometry(const pngshim_fast_reader *reader, uint32_t *width, uint32_t *height,
                                  int *channels, int *whole) {
    *width = reader->width;
    *height = reader->height;
    *channels = reader->channels;
    *whole = reader->filtered != NULL;
}

size_t pngshim_fast_reader_held_bytes(const pngshim_fast_reader *reader) {
    size_t held = reader->filtered != NULL ? reader->filtered_size : reader->strip_capacity;
    if (reader->prev != NULL) held += reader->row_bytes;
    return held + reader->out_capacity;
}

// Walks and checks the chunks from IHDR to the end of the first IDAT run; fills the geometry. No allocation.
static int parse(pngshim_fast_reader *r) {
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    const unsigned char *d = r->data;
    size_t size = r->size;
    if (size < 8 + 25 || memcmp(d, signature, 8) != 0) return PNGSHIM_FALLBACK;
    if (be32(d + 8) != 13 || memcmp(d + 12, "IHDR", 4) != 0) return PNGSHIM_FALLBACK;
    if (libdeflate_crc32(0, d + 12, 17) != be32(d + 29)) return PNGSHIM_FALLBACK;
    r->width = be32(d + 16);
    r->height = be32(d + 20);
    int depth = d[24], color = d[25];
    if (r->width == 0 || r->height == 0 || r->width > FAST_MAX_SIDE || r->height > FAST_MAX_SIDE) {
        return PNGSHIM_FALLBACK;
    }
    if (depth != 8 || d[26] != 0 || d[27] != 0 || d[28] > 1) return PNGSHIM_FALLBACK;
    switch (color) {
    case 0: r->bpp = 1; r->channels = 1; break;
    case 2: r->bpp = 3; r->channels = 3; break;
    case 4: r->bpp = 2; r->channels = 4; break;
    case 6: r->bpp = 4; r->channels = 4; break;
    default: return PNGSHIM_FALLBACK;  // palette (and invalid types) stay with libpng
    }
    r->interlaced = d[28] == 1;
    r->row_bytes = (size_t)r->width * (size_t)r->bpp;

    int seen_gamma = 0;
    size_t pos = 33;
    for (;;) {
        if (size - pos < 8) return PNGSHIM_FALLBACK;  // the data ended early: libpng says how
        uint32_t length = be32(d + pos);
        const unsigned char *type = d + pos + 4;
        int is_idat = memcmp(type, "IDAT", 4) == 0;
        if (r->idat_chunks > 0 && !is_idat) break;  // the end of the image data: libpng's rows stop here too
        if (length > 0x7fffffffu || size - pos < 12 || length > size - pos - 12) return PNGSHIM_FALLBACK;
        if (!is_letter(type[0]) || !is_letter(type[1]) || !is_letter(type[2]) || !is_letter(type[3])) {
            return PNGSHIM_FALLBACK;
        }
        if (libdeflate_crc32(0, type, (size_t)length + 4) != be32(type + 4 + length)) return PNGSHIM_FALLBACK;
        if (is_idat) {
            if (r->idat_chunks == 0) r->idat_start = pos;
            r->idat_chunks += 1;
            r->idat_bytes += length;
        } else if (memcmp(type, "gAMA", 4) == 0) {
            if (seen_gamma || length != 4) return PNGSHIM_FALLBACK;
            uint32_t gamma = be32(type + 4);
            if (gamma < FAST_GAMMA_LOW || gamma > FAST_GAMMA_HIGH) return PNGSHIM_FALLBACK;
            seen_gamma = 1;
        } else if (memcmp(type, "tRNS", 4) == 0 || (type[0] & 0x20) == 0) {
            // Transparency, and every critical chunk but IDAT (PLTE, IEND before the data, a second IHDR, unknown
            // ones): libpng's.
            return PNGSHIM_FALLBACK;
        }
        pos += 12 + (size_t)length;
        if (pos == size) {
            if (r->idat_chunks == 0) return PNGSHIM_FALLBACK;
            break;
        }
    }

    // The inflated size: every row (of every Adam7 pass) with its filter byte.
    size_t total = 0;
    if (!r->interlaced) {
        if (__builtin_mul_overflow(r->row_bytes + 1, (size_t)r->height, &total)) return PNGSHIM_FALLBACK;
    } else {
        for (int p = 0; p < 7; p++) {
            uint32_t xs = adam7[p][0], ys = adam7[p][1], dx = adam7[p][2], dy = adam7[p][3];
            uint32_t w = r->width > xs ? (r->width - xs + dx - 1) / dx : 0;
            uint32_t h = r->height > ys ? (r->height - ys + dy - 1) / dy : 0;
            if (w == 0) h = 0;  // an empty pass has no rows, not even filter bytes
            r->pass_width[p] = w;
            r->pass_height[p] = h;
            r->pass_offset[p] = total;
            size_t pass_size = 0;
            if (__builtin_mul_overflow((size_t)w * (size_t)r->bpp + 1, (size_t)h, &pass_size) ||
                __builtin_add_overflow(total, pass_size, &total)) {
                return PNGSHIM_FALLBACK;
            }
        }
    }
    r->filtered_size = total;
    return PNGSHIM_OK;
}

static int inflate_whole(pngshim_fast_reader *r) {
    r->filtered = (unsigned char *)malloc(r->filtered_size);
    if (r->filtered == NULL) return PNGSHIM_NO_MEMORY;
    const unsigned char *input = r->data + r->idat_start + 8;
    unsigned char *joined = NULL;
    if (r->idat_chunks > 1) {
        // libdeflate takes the stream in one piece: join the chunks' data.
        joined = (unsigned char *)malloc(r->idat_bytes > 0 ? r->idat_bytes : 1);
        if (joined == NULL) return PNGSHIM_NO_MEMORY;
        size_t pos = r->idat_start, filled = 0;
        for (uint32_t i = 0; i < r->idat_chunks; i++) {
            uint32_t length = be32(r->data + pos);
            memcpy(joined + filled, r->data + pos + 8, length);
            filled += length;
            pos += 12 + (size_t)length;
        }
        input = joined;
    }
    struct libdeflate_decompressor *inflater = libdeflate_alloc_decompressor();
    if (inflater == NULL) {
        free(joined);
        return PNGSHIM_NO_MEMORY;
    }
    size_t used_in = 0, used_out = 0;
    enum libdeflate_result result = libdeflate_zlib_decompress_ex(
        inflater, input, r->idat_bytes, r->filtered, r->filtered_size, &used_in, &used_out);
    libdeflate_free_decompressor(inflater);
    free(joined);
    // Exactly the image's bytes, then the stream's end, then nothing: anything else is libpng's to judge.
    if (result != LIBDEFLATE_SUCCESS || used_out != r->filtered_size || used_in != r->idat_bytes) {
        return PNGSHIM_FALLBACK;
    }
    if (r->interlaced) {
        // Every pass is reconstructed now: an output row needs pixels from several of them.
        for (int p = 0; p < 7; p++) {
            size_t pass_row = (size_t)r->pass_width[p] * (size_t)r->bpp;
            if (pngshim_unfilter_rows(r->filtered + r->pass_offset[p], pass_row + 1, NULL, r->pass_height[p],
                                      pass_row, r->bpp) != 0) {
                return PNGSHIM_FALLBACK;
            }
        }
    }
    return PNGSHIM_OK;
}

int pngshim_fast_reader_open(const unsigned char *data, size_t size, uint64_t max_pixels, size_t whole_limit,
                             pngshim_fast_reader **out) {
    *out = NULL;
    if (data == NULL) return PNGSHIM_FALLBACK;
    pngshim_fast_reader *r = (pngshim_fast_reader *)calloc(1, sizeof(pngshim_fast_reader));
    if (r == NULL) return PNGSHIM_NO_MEMORY;
    r->data = data;
    r->size = size;
    int status = parse(r);
    if (status == PNGSHIM_OK && (uint64_t)r->width * (uint64_t)r->height > max_pixels) status = PNGSHIM_TOO_LARGE;
    if (status == PNGSHIM_OK) {
        if (r->filtered_size <= whole_limit) {
            status = inflate_whole(r);
        } else if (r->interlaced) {
            status = PNGSHIM_FALLBACK;
        } else {
            r->prev = (unsigned char *)malloc(r->row_bytes);
            if (r->prev == NULL || inflateInit(&r->zlib) != Z_OK) {
                status = PNGSHIM_NO_MEMORY;
            } else {
                r->zlib_open = 1;
                r->next_chunk = r->idat_start;  // entered by enter_chunk when inflate needs input
                r->chunks_left = r->idat_chunks;
            }
        }
    }
    if (status != PNGSHIM_OK) {
        pngshim_fast_reader_destroy(r);
        return status;
    }
    *out = r;
    return PNGSHIM_OK;
}

// Stream mode: gives zlib the next chunk of the IDAT run (checked by parse); 0 when the run is over.
static int enter_chunk(pngshim_fast_reader *r) {
    if (r->chunks_left == 0) return 0;
    uint32_t length = be32(r->data + r->next_chunk);
    r->zlib.next_in = (Bytef *)(r->data + r->next_chunk + 8);
    r->zlib.avail_in = length;
    r->next_chunk += 12 + (size_t)length;
    r->chunks_left -= 1;
    return 1;
}

// Stream mode: inflates exactly `count` bytes; PNGSHIM_FALLBACK if the stream is corrupt or ends early.
static int inflate_some(pngshim_fast_reader *r, unsigned char *dst, size_t count) {
    z_stream *z = &r->zlib;
    z->next_out = dst;
    while (count > 0) {
        uInt step = count > 0x40000000u ? 0x40000000u : (uInt)count;
        z->avail_out = step;
        while (z->avail_out > 0) {
            if (r->zlib_ended) return PNGSHIM_FALLBACK;
            if (z->avail_in == 0 && !enter_chunk(r)) return PNGSHIM_FALLBACK;
            if (z->avail_in == 0) continue;
            int result = inflate(z, Z_NO_FLUSH);
            if (result == Z_STREAM_END) {
                r->zlib_ended = 1;
            } else if (result != Z_OK) {
                return PNGSHIM_FALLBACK;
            }
        }
        count -= step;
    }
    return PNGSHIM_OK;
}

// Stream mode, after the last row: the stream must end here, with nothing left in the run.
static int finish_stream(pngshim_fast_reader *r) {
    z_stream *z = &r->zlib;
    unsigned char spare;
    while (!r->zlib_ended) {
        if (z->avail_in == 0 && !enter_chunk(r)) return PNGSHIM_FALLBACK;
        if (z->avail_in == 0) continue;
        z->next_out = &spare;
        z->avail_out = 1;
        int result = inflate(z, Z_NO_FLUSH);
        if (z->avail_out == 0) return PNGSHIM_FALLBACK;  // more image data than the image has
        if (result == Z_STREAM_END) {
            r->zlib_ended = 1;
        } else if (result != Z_OK) {
            return PNGSHIM_FALLBACK;
        }
    }
    return z->avail_in == 0 && r->chunks_left == 0 ? PNGSHIM_OK : PNGSHIM_FALLBACK;
}

static void copy_pixel(unsigned char *dst, const unsigned char *src, int bpp) {
    switch (bpp) {
    case 1: dst[0] = src[0]; break;
    case 2: memcpy(dst, src, 2); break;
    case 3: memcpy(dst, src, 3); break;
    default: memcpy(dst, src, 4); break;
    }
}

// One Adam7 output row (source layout) from the reconstructed passes.
static void assemble_row(const pngshim_fast_reader *r, uint32_t y, unsigned char *dst) {
    for (int p = 0; p < 7; p++) {
        uint32_t xs = adam7[p][0], ys = adam7[p][1], dx = adam7[p][2], dy = adam7[p][3];
        if (r->pass_height[p] == 0 || y < ys || (y - ys) % dy != 0) continue;
        size_t pass_row = (size_t)r->pass_width[p] * (size_t)r->bpp;
        const unsigned char *src = r->filtered + r->pass_offset[p] + (size_t)((y - ys) / dy) * (pass_row + 1) + 1;
        for (uint32_t k = 0, x = xs; k < r->pass_width[p]; k++, x += dx) {
            copy_pixel(dst + (size_t)x * (size_t)r->bpp, src + (size_t)k * (size_t)r->bpp, r->bpp);
        }
    }
}

// Gray + alpha → RGBA (`src` and `dst` do not overlap).
static void widen_gray_alpha(const unsigned char *src, unsigned char *dst, uint32_t width) {
    for (uint32_t x = 0; x < width; x++) {
        unsigned char g = src[2 * (size_t)x], a = src[2 * (size_t)x + 1];
        dst[4 * (size_t)x] = g;
        dst[4 * (size_t)x + 1] = g;
        dst[4 * (size_t)x + 2] = g;
        dst[4 * (size_t)x + 3] = a;
    }
}

int pngshim_fast_reader_read(pngshim_fast_reader *r, uint32_t count, const unsigned char **rows, size_t *stride) {
    *rows = NULL;
    *stride = 0;
    if (r->status != PNGSHIM_OK) return r->status;
    if (count == 0 || count > r->height - r->next_row) {
        r->status = PNGSHIM_FALLBACK;
        return r->status;
    }
    size_t filtered_row = r->row_bytes + 1;
    size_t out_row = (size_t)r->width * (size_t)r->channels;
    const unsigned char *source = NULL;  // the first reconstructed row, source layout
    size_t source_stride = filtered_row;
    int status = PNGSHIM_OK;

    if (r->filtered != NULL && r->interlaced) {
        // Assemble the rows in the source layout into `out` (widened after, in place from the back).
        size_t row_size = out_row > r->row_bytes ? out_row : r->row_bytes, needed = 0;
        if (__builtin_mul_overflow(row_size, (size_t)count, &needed) || !grow(&r->out, &r->out_capacity, needed)) {
            status = PNGSHIM_NO_MEMORY;
        } else {
            for (uint32_t i = 0; i < count; i++) assemble_row(r, r->next_row + i, r->out + (size_t)i * row_size);
            if (r->bpp == 2) {
                unsigned char *spare = (unsigned char *)malloc(r->row_bytes);
                if (spare == NULL) {
                    status = PNGSHIM_NO_MEMORY;
                } else {
                    for (uint32_t i = 0; i < count; i++) {
                        unsigned char *line = r->out + (size_t)i * row_size;
                        memcpy(spare, line, r->row_bytes);
                        widen_gray_alpha(spare, line, r->width);
                    }
                    free(spare);
                }
            }
            if (status == PNGSHIM_OK) {
                r->next_row += count;
                *rows = r->out;
                *stride = row_size;
                return PNGSHIM_OK;
            }
        }
    } else if (r->filtered != NULL) {
        unsigned char *first = r->filtered + (size_t)r->next_row * filtered_row;
        const unsigned char *above = r->next_row == 0 ? NULL : first - filtered_row + 1;
        if (pngshim_unfilter_rows(first, filtered_row, above, count, r->row_bytes, r->bpp) != 0) {
            status = PNGSHIM_FALLBACK;
        }
        source = first + 1;
    } else {
        size_t needed = 0;
        if (__builtin_mul_overflow(filtered_row, (size_t)count, &needed) ||
            !grow(&r->strip, &r->strip_capacity, needed)) {
            status = PNGSHIM_NO_MEMORY;
        } else {
            status = inflate_some(r, r->strip, needed);
        }
        if (status == PNGSHIM_OK && pngshim_unfilter_rows(r->strip, filtered_row, r->have_prev ? r->prev : NULL,
                                                           count, r->row_bytes, r->bpp) != 0) {
            status = PNGSHIM_FALLBACK;
        }
        if (status == PNGSHIM_OK) {
            memcpy(r->prev, r->strip + (size_t)(count - 1) * filtered_row + 1, r->row_bytes);
            r->have_prev = 1;
            if (r->next_row + count == r->height) status = finish_stream(r);
        }
        source = r->strip + 1;
    }
    if (status != PNGSHIM_OK) {
        r->status = status;
        return status;
    }
    r->next_row += count;
    if (r->bpp == 2) {
        size_t needed = 0;
        if (__builtin_mul_overflow(out_row, (size_t)count, &needed) || !grow(&r->out, &r->out_capacity, needed)) {
            r->status = PNGSHIM_NO_MEMORY;
            return r->status;
        }
        for (uint32_t i = 0; i < count; i++) {
            widen_gray_alpha(source + (size_t)i * source_stride, r->out + (size_t)i * out_row, r->width);
        }
        *rows = r->out;
        *stride = out_row;
        return PNGSHIM_OK;
    }
    *rows = source;
    *stride = source_stride;
    return PNGSHIM_OK;
}
