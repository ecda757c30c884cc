#include "CBaselines.h"
#include <stdlib.h>

// One axis of an area-average resize: for each output index, the first source index and the weights (fixed
// point, 16 fractional bits) of the source samples it covers.
typedef struct {
    int *start;
    int *count;
    int *weights; // count[i] entries per output, at offset i * maxCount
    int maxCount;
} axis_plan;

static int plan_axis(axis_plan *plan, int src, int dst) {
    double step = (double)src / dst;
    plan->maxCount = (int)step + 2;
    plan->start = malloc(sizeof(int) * dst);
    plan->count = malloc(sizeof(int) * dst);
    plan->weights = malloc(sizeof(int) * (size_t)dst * plan->maxCount);
    if (!plan->start || !plan->count || !plan->weights) return -1;
    for (int i = 0; i < dst; i++) {
        double begin = i * step, end = (i + 1) * step;
        int first = (int)begin;
        int last = (int)end;
        if (last >= src) last = src - 1;
        if ((double)last == end && last > first) last--;
        int n = 0, sum = 0;
        for (int s = first; s <= last && n < plan->maxCount; s++, n++) {
            double lo = s > begin ? s : begin, hi = s + 1 < end ? s + 1 : end;
            int w = (int)((hi - lo) / step * 65536.0 + 0.5);
            plan->weights[(size_t)i * plan->maxCount + n] = w;
            sum += w;
        }
        // Give the rounding error to the first sample so weights sum to exactly 1.0.
        plan->weights[(size_t)i * plan->maxCount] += 65536 - sum;
        plan->start[i] = first;
        plan->count[i] = n;
    }
    return 0;
}

static void free_axis(axis_plan *plan) {
    free(plan->start);
    free(plan->count);
    free(plan->weights);
}

void cb_area_resize(const uint8_t *src, int srcWidth, int srcHeight, uint8_t *dst, int dstWidth, int dstHeight,
                    int channels) {
    axis_plan horizontal = {0}, vertical = {0};
    // Horizontal pass into 32-bit rows (16 fractional bits), then vertical pass to bytes.
    uint32_t *rows = malloc(sizeof(uint32_t) * (size_t)dstWidth * channels * srcHeight);
    if (rows == NULL || plan_axis(&horizontal, srcWidth, dstWidth) || plan_axis(&vertical, srcHeight, dstHeight)) {
        free(rows);
        free_axis(&horizontal);
        free_axis(&vertical);
        return;
    }
    for (int y = 0; y < srcHeight; y++) {
        const uint8_t *in = src + (size_t)y * srcWidth * channels;
        uint32_t *out = rows + (size_t)y * dstWidth * channels;
        for (int x = 0; x < dstWidth; x++) {
            const int *w = horizontal.weights + (size_t)x * horizontal.maxCount;
            const uint8_t *p = in + (size_t)horizontal.start[x] * channels;
            for (int c = 0; c < channels; c++) {
                uint32_t acc = 0;
                for (int k = 0; k < horizontal.count[x]; k++) acc += (uint32_t)w[k] * p[k * channels + c];
                out[x * channels + c] = acc;
            }
        }
    }
    size_t rowLength = (size_t)dstWidth * channels;
    for (int y = 0; y < dstHeight; y++) {
        const int *w = vertical.weights + (size_t)y * vertical.maxCount;
        uint8_t *out = dst + (size_t)y * rowLength;
        for (size_t i = 0; i < rowLength; i++) {
            uint64_t acc = 0;
            for (int k = 0; k < vertical.count[y]; k++)
                acc += (uint64_t)w[k] * rows[(size_t)(vertical.start[y] + k) * rowLength + i];
            uint64_t value = (acc + (1ull << 31)) >> 32;
            out[i] = value > 255 ? 255 : (uint8_t)value;
        }
    }
    free(rows);
    free_axis(&horizontal);
    free_axis(&vertical);
}
