// What each of libjpeg-turbo's DCT scaling factors costs on bench-proxy's JPEG sources: tjDecompress2 to RGB at
// every factor from 1/8 to 1, CPU time of the call alone, the rounds interleaved so the machine's drift touches
// every factor alike. Why JPEGDecoder keeps to 1/8, 1/4, 1/2 and 1 (the others run scalar code).
//
//   cc -O2 raw_jpeg_scales.c -o raw_jpeg_scales -lturbojpeg && ./raw_jpeg_scales ROUNDS FILE...
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <turbojpeg.h>

static double cpu_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static const tjscalingfactor factors[] = {{1, 8}, {1, 4}, {3, 8}, {1, 2}, {5, 8}, {3, 4}, {7, 8}, {1, 1}};
enum { factor_count = sizeof(factors) / sizeof(factors[0]) };

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s ROUNDS FILE...\n", argv[0]);
        return 2;
    }
    int rounds = atoi(argv[1]);
    double spent[factor_count] = {0};
    long count = 0;
    tjhandle handle = tjInitDecompress();
    for (int round = 0; round < rounds; round++) {
        for (int index = 2; index < argc; index++) {
            FILE *file = fopen(argv[index], "rb");
            if (!file) return 1;
            fseek(file, 0, SEEK_END);
            long size = ftell(file);
            rewind(file);
            unsigned char *source = malloc((size_t)size);
            if (!source || fread(source, 1, (size_t)size, file) != (size_t)size) return 1;
            fclose(file);
            int width, height, subsampling, colorspace;
            if (tjDecompressHeader3(handle, source, (unsigned long)size, &width, &height, &subsampling, &colorspace))
                return 1;
            for (int f = 0; f < factor_count; f++) {
                int scaled_width = TJSCALED(width, factors[f]), scaled_height = TJSCALED(height, factors[f]);
                unsigned char *pixels = malloc((size_t)scaled_width * scaled_height * 3);
                double start = cpu_seconds();
                if (tjDecompress2(handle, source, (unsigned long)size, pixels, scaled_width, 0, scaled_height, TJPF_RGB,
                                  0)) {
                    fprintf(stderr, "%s: %s\n", argv[index], tjGetErrorStr2(handle));
                    return 1;
                }
                spent[f] += cpu_seconds() - start;
                free(pixels);
            }
            count += 1;
            free(source);
        }
    }
    tjDestroy(handle);
    printf("%ld decodes per factor, CPU ms per decode:", count);
    for (int f = 0; f < factor_count; f++)
        printf(" %d/%d %.2f", factors[f].num, factors[f].denom, spent[f] / count * 1e3);
    printf("\n");
    return 0;
}
