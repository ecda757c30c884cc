// See include/pngshim.h. Every setjmp sits in the function that runs the whole libpng call, so a longjmp from
// libpng (through shim_error) only unwinds C frames.

#include "pngshim.h"

#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct shim_error_state {
    int status;
    char message[256];
} shim_error_state;

static void shim_error(png_structp png, png_const_charp message) {
    shim_error_state *state = (shim_error_state *)png_get_error_ptr(png);
    if (state != NULL) {
        if (state->status == PNGSHIM_OK) state->status = PNGSHIM_ERROR;
        if (state->message[0] == '\0') {
            strncpy(state->message, message != NULL ? message : "libpng error", sizeof state->message - 1);
            state->message[sizeof state->message - 1] = '\0';
        }
    }
    png_longjmp(png, 1);
}

static void shim_warning(png_structp png, png_const_charp message) {
    // Warnings (benign CRC errors in ancillary chunks, unknown chunks) are not failures; stay silent.
    (void)png;
    (void)message;
}

static void copy_message(const shim_error_state *state, char *message, size_t capacity) {
    if (message == NULL || capacity == 0) return;
    strncpy(message, state->message, capacity - 1);
    message[capacity - 1] = '\0';
}

// MARK: - Encoder

void pngshim_buffer_free(pngshim_buffer *buffer) {
    if (buffer == NULL) return;
    free(buffer->data);
    buffer->data = NULL;
    buffer->size = 0;
    buffer->capacity = 0;
}

static void buffer_write(png_structp png, png_bytep bytes, size_t length) {
    pngshim_buffer *out = (pngshim_buffer *)png_get_io_ptr(png);
    if (length > SIZE_MAX - out->size) png_error(png, "output too large");
    size_t needed = out->size + length;
    if (needed > out->capacity) {
        size_t capacity = out->capacity < 4096 ? 4096 : out->capacity;
        while (capacity < needed) {
            if (capacity > SIZE_MAX / 2) {
                capacity = needed;
                break;
            }
            capacity *= 2;
        }
        unsigned char *grown = (unsigned char *)realloc(out->data, capacity);
        if (grown == NULL) {
            shim_error_state *state = (shim_error_state *)png_get_error_ptr(png);
            state->status = PNGSHIM_NO_MEMORY;
            png_error(png, "out of memory");
        }
        out->data = grown;
        out->capacity = capacity;
    }
    memcpy(out->data + out->size, bytes, length);
    out->size = needed;
}

static void buffer_flush(png_structp png) { (void)png; }

int pngshim_encode(const unsigned char *pixels, uint32_t width, uint32_t height, size_t bytes_per_row,
                   int color_type, int level, int filters, int interlace, const unsigned char *icc,
                   size_t icc_length, pngshim_buffer *out, char *message, size_t message_capacity) {
    shim_error_state state;
    memset(&state, 0, sizeof state);
    out->data = NULL;
    out->size = 0;
    out->capacity = 0;
    if (width == 0 || height == 0) {
        strncpy(state.message, "empty image", sizeof state.message - 1);
        copy_message(&state, message, message_capacity);
        return PNGSHIM_ERROR;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &state, shim_error, shim_warning);
    if (png == NULL) return PNGSHIM_NO_MEMORY;
    png_infop info = png_create_info_struct(png);
    png_bytep *rows = (png_bytep *)malloc(sizeof(png_bytep) * (size_t)height);
    if (info == NULL || rows == NULL) {
        free(rows);
        png_destroy_write_struct(&png, info != NULL ? &info : NULL);
        return PNGSHIM_NO_MEMORY;
    }
    for (uint32_t y = 0; y < height; y++) rows[y] = (png_bytep)(pixels + (size_t)y * bytes_per_row);

    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(rows);
        pngshim_buffer_free(out);
        copy_message(&state, message, message_capacity);
        return state.status != PNGSHIM_OK ? state.status : PNGSHIM_ERROR;
    }
    png_set_write_fn(png, out, buffer_write, buffer_flush);
    png_set_IHDR(png, info, width, height, 8, color_type, interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, level);
    if (filters != 0) png_set_filter(png, PNG_FILTER_TYPE_BASE, filters);
    if (icc != NULL && icc_length > 0 && icc_length <= 0x7fffffff) {
        // A profile libpng finds inconsistent is dropped with a warning rather than failing the encode.
        png_set_benign_errors(png, 1);
        png_set_iCCP(png, info, "ICC Profile", PNG_COMPRESSION_TYPE_BASE, icc, (png_uint_32)icc_length);
    }
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    free(rows);
    return PNGSHIM_OK;
}

// MARK: - CRC

uint32_t pngshim_crc32(uint32_t crc, const unsigned char *bytes, size_t length) {
    if (bytes == NULL || length == 0) return crc;
    return (uint32_t)crc32_z(crc, bytes, length);
}

// MARK: - iCCP reader

typedef struct memory_source {
    const unsigned char *data;
    size_t size;
    size_t offset;
} memory_source;

static void memory_read(png_structp png, png_bytep bytes, size_t length) {
    memory_source *source = (memory_source *)png_get_io_ptr(png);
    if (length > source->size - source->offset) png_error(png, "unexpected end of data");
    memcpy(bytes, source->data + source->offset, length);
    source->offset += length;
}

int pngshim_read_iccp(const unsigned char *data, size_t size, unsigned char **profile, size_t *profile_length) {
    *profile = NULL;
    *profile_length = 0;
    shim_error_state state;
    memset(&state, 0, sizeof state);
    memory_source source = {data, size, 0};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, shim_error, shim_warning);
    if (png == NULL) return PNGSHIM_NO_MEMORY;
    png_infop info = png_create_info_struct(png);
    if (info == NULL) {
        png_destroy_read_struct(&png, NULL, NULL);
        return PNGSHIM_NO_MEMORY;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(*profile);
        *profile = NULL;
        *profile_length = 0;
        return state.status != PNGSHIM_OK ? state.status : PNGSHIM_ERROR;
    }
    png_set_read_fn(png, &source, memory_read);
    png_read_info(png, info);
    png_charp name = NULL;
    int compression = 0;
    png_bytep bytes = NULL;
    png_uint_32 length = 0;
    if (png_get_iCCP(png, info, &name, &compression, &bytes, &length) != 0 && bytes != NULL && length > 0) {
        unsigned char *copy = (unsigned char *)malloc(length);
        if (copy == NULL) {
            state.status = PNGSHIM_NO_MEMORY;
            png_error(png, "out of memory");
        }
        memcpy(copy, bytes, length);
        *profile = copy;
        *profile_length = length;
    }
    png_destroy_read_struct(&png, &info, NULL);
    return PNGSHIM_OK;
}

// MARK: - Progressive reader

struct pngshim_reader {
    shim_error_state error;  // first member: libpng's error pointer
    png_structp png;
    png_infop info;
    uint64_t max_pixels;
    int done;
    int have_geometry;
    uint32_t width;
    uint32_t height;
    int channels;
    size_t bytes_per_row;
    unsigned char *pixels;
    uint64_t rows_delivered;
};

static void reader_info(png_structp png, png_infop info) {
    pngshim_reader *reader = (pngshim_reader *)png_get_progressive_ptr(png);
    png_uint_32 width = 0, height = 0;
    int bit_depth = 0, color_type = 0, interlace = 0;
    png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, NULL, NULL);
    if ((uint64_t)width * (uint64_t)height > reader->max_pixels) {
        reader->error.status = PNGSHIM_TOO_LARGE;
        png_error(png, "image exceeds the pixel budget");
    }
    // The same output layout as the full (simplified API) decode: RGBA when there is any alpha (alpha channel or
    // tRNS), else RGB for colour and palette images, gray for gray ones; 8 bits per channel; sRGB output gamma.
    int has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0 || png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    int is_color = (color_type & PNG_COLOR_MASK_COLOR) != 0;
    png_set_expand(png);
    if (bit_depth == 16) png_set_scale_16(png);
    if (has_alpha && !is_color) png_set_gray_to_rgb(png);
    png_set_alpha_mode(png, PNG_ALPHA_PNG, PNG_DEFAULT_sRGB);
    (void)png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int channels = png_get_channels(png, info);
    size_t bytes_per_row = png_get_rowbytes(png, info);
    if ((channels != 1 && channels != 3 && channels != 4) || bytes_per_row != (size_t)width * (size_t)channels) {
        png_error(png, "unexpected output layout");
    }
    if (height > 0 && bytes_per_row > SIZE_MAX / height) png_error(png, "image too large for memory");
    unsigned char *pixels = (unsigned char *)calloc((size_t)height, bytes_per_row);
    if (pixels == NULL) {
        reader->error.status = PNGSHIM_NO_MEMORY;
        png_error(png, "out of memory");
    }
    reader->pixels = pixels;
    reader->width = width;
    reader->height = height;
    reader->channels = channels;
    reader->bytes_per_row = bytes_per_row;
    reader->have_geometry = 1;
}

static void reader_row(png_structp png, png_bytep row, png_uint_32 row_number, int pass) {
    (void)pass;
    pngshim_reader *reader = (pngshim_reader *)png_get_progressive_ptr(png);
    if (row == NULL || reader->pixels == NULL || row_number >= reader->height) return;
    png_progressive_combine_row(png, reader->pixels + (size_t)row_number * reader->bytes_per_row, row);
    reader->rows_delivered += 1;
}

static void reader_end(png_structp png, png_infop info) {
    (void)info;
    pngshim_reader *reader = (pngshim_reader *)png_get_progressive_ptr(png);
    reader->done = 1;
}

pngshim_reader *pngshim_reader_create(uint64_t max_pixels) {
    pngshim_reader *reader = (pngshim_reader *)calloc(1, sizeof(pngshim_reader));
    if (reader == NULL) return NULL;
    reader->max_pixels = max_pixels;
    reader->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader->error, shim_error, shim_warning);
    if (reader->png == NULL) {
        free(reader);
        return NULL;
    }
    reader->info = png_create_info_struct(reader->png);
    if (reader->info == NULL) {
        png_destroy_read_struct(&reader->png, NULL, NULL);
        free(reader);
        return NULL;
    }
    png_set_progressive_read_fn(reader->png, reader, reader_info, reader_row, reader_end);
    return reader;
}

void pngshim_reader_destroy(pngshim_reader *reader) {
    if (reader == NULL) return;
    png_destroy_read_struct(&reader->png, &reader->info, NULL);
    free(reader->pixels);
    free(reader);
}

int pngshim_reader_feed(pngshim_reader *reader, const unsigned char *data, size_t size) {
    if (reader->error.status != PNGSHIM_OK) return reader->error.status;
    if (reader->done) return PNGSHIM_DONE;
    if (size == 0) return PNGSHIM_OK;
    if (setjmp(png_jmpbuf(reader->png))) {
        if (reader->error.status == PNGSHIM_OK) reader->error.status = PNGSHIM_ERROR;
        return reader->error.status;
    }
    png_process_data(reader->png, reader->info, (png_bytep)data, size);
    return reader->done ? PNGSHIM_DONE : PNGSHIM_OK;
}

const char *pngshim_reader_message(const pngshim_reader *reader) { return reader->error.message; }

int pngshim_reader_geometry(const pngshim_reader *reader, uint32_t *width, uint32_t *height, int *channels,
                            size_t *bytes_per_row) {
    if (!reader->have_geometry) return 0;
    *width = reader->width;
    *height = reader->height;
    *channels = reader->channels;
    *bytes_per_row = reader->bytes_per_row;
    return 1;
}

const unsigned char *pngshim_reader_pixels(const pngshim_reader *reader) { return reader->pixels; }

uint64_t pngshim_reader_rows_delivered(const pngshim_reader *reader) { return reader->rows_delivered; }
