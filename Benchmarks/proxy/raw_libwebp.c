// The raw libwebp calls one WebP thumbnail takes, timed alone: the floor under any server built on the same
// library (issue 34's WebP row). For each source: WebPDecode with libwebp's own scaling to fit inside 512x512
// (what the ThumbnailServer's WebP decoder and libvips's shrink-on-load both ask for), then WebPEncode of the RGB
// result at quality 80, method 4 (libwebp's defaults otherwise; the server's and libvips's settings). CPU time of
// the process around each call; no I/O, no allocation of the source inside the timing.
//
//   cc -O2 raw_libwebp.c -o raw_libwebp -lwebp && ./raw_libwebp ROUNDS FILE...
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <webp/decode.h>
#include <webp/encode.h>

static double cpu_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static unsigned char *read_file(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    rewind(file);
    unsigned char *bytes = length > 0 ? malloc((size_t)length) : NULL;
    if (bytes && fread(bytes, 1, (size_t)length, file) != (size_t)length) {
        free(bytes);
        bytes = NULL;
    }
    fclose(file);
    *size = (size_t)length;
    return bytes;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s ROUNDS FILE...\n", argv[0]);
        return 2;
    }
    int rounds = atoi(argv[1]);
    double decode = 0, encode = 0;
    long output = 0, count = 0;
    for (int round = 0; round < rounds; round++) {
        for (int index = 2; index < argc; index++) {
            size_t size;
            unsigned char *source = read_file(argv[index], &size);
            if (!source) {
                fprintf(stderr, "cannot read %s\n", argv[index]);
                return 1;
            }
            double start = cpu_seconds();
            WebPDecoderConfig config;
            WebPInitDecoderConfig(&config);
            if (WebPGetFeatures(source, size, &config.input) != VP8_STATUS_OK) return 1;
            int width = config.input.width, height = config.input.height;
            double scale = 512.0 / (double)(width > height ? width : height);
            int target_width = (int)(width * scale + 0.5), target_height = (int)(height * scale + 0.5);
            config.options.use_scaling = 1;
            config.options.scaled_width = target_width;
            config.options.scaled_height = target_height;
            config.output.colorspace = MODE_RGB;
            if (WebPDecode(source, size, &config) != VP8_STATUS_OK) {
                fprintf(stderr, "cannot decode %s\n", argv[index]);
                return 1;
            }
            double decoded = cpu_seconds();
            WebPConfig settings;
            WebPConfigInit(&settings);
            settings.quality = 80;
            settings.method = 4;
            WebPPicture picture;
            WebPPictureInit(&picture);
            picture.width = target_width;
            picture.height = target_height;
            WebPMemoryWriter writer;
            WebPMemoryWriterInit(&writer);
            picture.writer = WebPMemoryWrite;
            picture.custom_ptr = &writer;
            if (!WebPPictureImportRGB(&picture, config.output.u.RGBA.rgba, config.output.u.RGBA.stride) ||
                !WebPEncode(&settings, &picture)) {
                fprintf(stderr, "cannot encode %s\n", argv[index]);
                return 1;
            }
            double encoded = cpu_seconds();
            decode += decoded - start;
            encode += encoded - decoded;
            output += (long)writer.size;
            count += 1;
            WebPMemoryWriterClear(&writer);
            WebPPictureFree(&picture);
            WebPFreeDecBuffer(&config.output);
            free(source);
        }
    }
    int version = WebPGetEncoderVersion();
    printf("libwebp %d.%d.%d: %ld thumbnails, CPU ms per thumbnail: decode %.1f + encode %.1f = %.1f; mean %.1f KB\n",
           version >> 16, (version >> 8) & 0xff, version & 0xff, count, decode / count * 1e3, encode / count * 1e3,
           (decode + encode) / count * 1e3, (double)output / count / 1000.0);
    return 0;
}
