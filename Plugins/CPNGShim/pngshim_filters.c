// See pngshim_filters.h. Reconstruction is serial along a row (each byte needs its reconstructed left
// neighbour), so the 3- and 4-byte-pixel cases (RGB, RGBA: nearly every photo) run one pixel per SSE2 step, as
// libpng's own optional SSE2 code does (Debian builds libpng without it, and its scalar Paeth was a third of a
// 2.5 MP PNG decode). Filtering for the encoder has no such dependency: plain loops the compiler vectorizes.

#include "pngshim_filters.h"

#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static inline int paeth_predictor(int a, int b, int c) {
    int pa = b - c, pb = a - c, pc = pa + pb;
    pa = pa < 0 ? -pa : pa;
    pb = pb < 0 ? -pb : pb;
    pc = pc < 0 ? -pc : pc;
    return (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
}

// MARK: - Reconstruction, any pixel size

static void unfilter_sub(unsigned char *row, size_t n, int bpp) {
    for (size_t i = (size_t)bpp; i < n; i++) row[i] = (unsigned char)(row[i] + row[i - (size_t)bpp]);
}

static void unfilter_up(unsigned char *row, const unsigned char *prev, size_t n) {
    for (size_t i = 0; i < n; i++) row[i] = (unsigned char)(row[i] + prev[i]);
}

static void unfilter_avg(unsigned char *row, const unsigned char *prev, size_t n, int bpp) {
    size_t i = 0;
    if (prev == NULL) {
        for (i = (size_t)bpp; i < n; i++) row[i] = (unsigned char)(row[i] + (row[i - (size_t)bpp] >> 1));
        return;
    }
    for (; i < (size_t)bpp && i < n; i++) row[i] = (unsigned char)(row[i] + (prev[i] >> 1));
    for (; i < n; i++) row[i] = (unsigned char)(row[i] + ((row[i - (size_t)bpp] + prev[i]) >> 1));
}

static void unfilter_paeth(unsigned char *row, const unsigned char *prev, size_t n, int bpp) {
    size_t i = 0;
    for (; i < (size_t)bpp && i < n; i++) row[i] = (unsigned char)(row[i] + prev[i]);
    for (; i < n; i++) {
        row[i] = (unsigned char)(row[i] + paeth_predictor(row[i - (size_t)bpp], prev[i], prev[i - (size_t)bpp]));
    }
}

// MARK: - Reconstruction, 3 and 4 bytes per pixel, SSE2

#if defined(__SSE2__)
// A pixel moves through the low lanes of a register; memcpy keeps 3-byte loads and stores inside the row.
static inline __attribute__((always_inline)) __m128i load_pixel(const unsigned char *p, int bpp) {
    int32_t v = 0;
    memcpy(&v, p, (size_t)bpp);
    return _mm_cvtsi32_si128(v);
}

static inline __attribute__((always_inline)) void store_pixel(unsigned char *p, __m128i v, int bpp) {
    int32_t t = _mm_cvtsi128_si32(v);
    memcpy(p, &t, (size_t)bpp);
}

static inline __m128i abs_i16(__m128i x) { return _mm_max_epi16(x, _mm_sub_epi16(_mm_setzero_si128(), x)); }

static inline __m128i select_i16(__m128i mask, __m128i yes, __m128i no) {
    return _mm_or_si128(_mm_and_si128(mask, yes), _mm_andnot_si128(mask, no));
}

static inline __attribute__((always_inline)) void unfilter_sub_sse2(unsigned char *row, size_t n, int bpp) {
    __m128i a = _mm_setzero_si128();
    for (size_t i = 0; i + (size_t)bpp <= n; i += (size_t)bpp) {
        a = _mm_add_epi8(load_pixel(row + i, bpp), a);
        store_pixel(row + i, a, bpp);
    }
}

static inline __attribute__((always_inline)) void unfilter_avg_sse2(unsigned char *row, const unsigned char *prev, size_t n, int bpp) {
    const __m128i one = _mm_set1_epi8(1);
    __m128i a = _mm_setzero_si128();
    for (size_t i = 0; i + (size_t)bpp <= n; i += (size_t)bpp) {
        __m128i b = load_pixel(prev + i, bpp);
        // floor((a + b) / 2) = rounded-up average minus the carry of the lowest bit.
        __m128i avg = _mm_sub_epi8(_mm_avg_epu8(a, b), _mm_and_si128(_mm_xor_si128(a, b), one));
        a = _mm_add_epi8(load_pixel(row + i, bpp), avg);
        store_pixel(row + i, a, bpp);
    }
}

static inline __attribute__((always_inline)) void unfilter_paeth_sse2(unsigned char *row, const unsigned char *prev, size_t n, int bpp) {
    const __m128i zero = _mm_setzero_si128();
    __m128i a = zero, c = zero;  // 16-bit lanes
    for (size_t i = 0; i + (size_t)bpp <= n; i += (size_t)bpp) {
        __m128i b = _mm_unpacklo_epi8(load_pixel(prev + i, bpp), zero);
        __m128i pa = _mm_sub_epi16(b, c);  // p - a, where p = a + b - c
        __m128i pb = _mm_sub_epi16(a, c);  // p - b
        __m128i pc = _mm_add_epi16(pa, pb);
        pa = abs_i16(pa);
        pb = abs_i16(pb);
        pc = abs_i16(pc);
        __m128i smallest = _mm_min_epi16(pc, _mm_min_epi16(pa, pb));
        // Ties go to a, then b, then c.
        __m128i nearest =
            select_i16(_mm_cmpeq_epi16(smallest, pa), a, select_i16(_mm_cmpeq_epi16(smallest, pb), b, c));
        __m128i d = _mm_add_epi8(load_pixel(row + i, bpp), _mm_packus_epi16(nearest, nearest));
        store_pixel(row + i, d, bpp);
        a = _mm_unpacklo_epi8(d, zero);
        c = b;
    }
}

// SSE4.1 (pabsw, pblendvb) shortens the Paeth step's dependency chain by a quarter; checked once at run time.
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <smmintrin.h>
#define PNGSHIM_HAVE_SSE41_KERNELS 1

static int has_sse41(void) {
    static int cached = -1;  // a benign race: every thread computes the same answer
    if (cached < 0) {
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        cached = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_SSE4_1) != 0;
    }
    return cached;
}

__attribute__((target("sse4.1"))) static inline __attribute__((always_inline)) __m128i
paeth_step_sse41(__m128i a, __m128i b, __m128i c) {
    __m128i bc = _mm_sub_epi16(b, c), ac = _mm_sub_epi16(a, c);
    __m128i pa = _mm_abs_epi16(bc), pb = _mm_abs_epi16(ac), pc = _mm_abs_epi16(_mm_add_epi16(ac, bc));
    __m128i smallest = _mm_min_epi16(pc, _mm_min_epi16(pa, pb));
    return _mm_blendv_epi8(_mm_blendv_epi8(c, b, _mm_cmpeq_epi16(smallest, pb)), a, _mm_cmpeq_epi16(smallest, pa));
}

__attribute__((target("sse4.1"))) static inline __attribute__((always_inline)) void
unfilter_paeth_sse41(unsigned char *row, const unsigned char *prev, size_t n, int bpp) {
    __m128i a = _mm_setzero_si128(), c = a;
    for (size_t i = 0; i + (size_t)bpp <= n; i += (size_t)bpp) {
        __m128i b = _mm_cvtepu8_epi16(load_pixel(prev + i, bpp));
        __m128i nearest = paeth_step_sse41(a, b, c);
        __m128i d = _mm_add_epi8(load_pixel(row + i, bpp), _mm_packus_epi16(nearest, nearest));
        store_pixel(row + i, d, bpp);
        a = _mm_cvtepu8_epi16(d);
        c = b;
    }
}

// Two Paeth rows at once, `lower` one pixel behind `upper`, one in each half of the registers: the two
// dependency chains overlap, nearly halving the time. `lower`'s up neighbour is `upper`'s pixel just decoded,
// taken from the register rather than memory (a 3-byte store forwards badly to a 4-byte load).
__attribute__((target("sse4.1"))) static inline __attribute__((always_inline)) void
unfilter_paeth_pair_sse41(unsigned char *upper, const unsigned char *prev, unsigned char *lower, size_t n, int bpp) {
    const __m128i zero = _mm_setzero_si128();
    __m128i a = zero, c = zero;  // 16-bit lanes 0-3: upper row; 4-7: lower row
    size_t pixels = n / (size_t)bpp;
    for (size_t k = 0; k <= pixels; k++) {
        int32_t up = 0, filtered_upper = 0, filtered_lower = 0;
        if (k < pixels) {
            memcpy(&filtered_upper, upper + k * (size_t)bpp, (size_t)bpp);
            memcpy(&up, prev + k * (size_t)bpp, (size_t)bpp);
        }
        if (k > 0) memcpy(&filtered_lower, lower + (k - 1) * (size_t)bpp, (size_t)bpp);
        __m128i d = _mm_insert_epi32(_mm_cvtsi32_si128(filtered_upper), filtered_lower, 1);
        __m128i b = _mm_unpacklo_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128(up)), a);
        __m128i nearest = paeth_step_sse41(a, b, c);
        d = _mm_add_epi8(d, _mm_packus_epi16(nearest, nearest));
        if (k < pixels) store_pixel(upper + k * (size_t)bpp, d, bpp);
        if (k > 0) {
            int32_t t = _mm_extract_epi32(d, 1);
            memcpy(lower + (k - 1) * (size_t)bpp, &t, (size_t)bpp);
        }
        a = _mm_cvtepu8_epi16(d);
        c = b;
        if (k == 0) {
            // The lower row starts one step late, from zero neighbours on its left.
            a = _mm_unpacklo_epi64(a, zero);
            c = _mm_unpacklo_epi64(c, zero);
        }
    }
}

__attribute__((target("sse4.1"))) static void unfilter_paeth_sse41_3(unsigned char *row, const unsigned char *prev,
                                                                     size_t n) {
    unfilter_paeth_sse41(row, prev, n, 3);
}
__attribute__((target("sse4.1"))) static void unfilter_paeth_sse41_4(unsigned char *row, const unsigned char *prev,
                                                                     size_t n) {
    unfilter_paeth_sse41(row, prev, n, 4);
}
__attribute__((target("sse4.1"))) static void unfilter_paeth_pair_sse41_3(unsigned char *upper,
                                                                          const unsigned char *prev,
                                                                          unsigned char *lower, size_t n) {
    unfilter_paeth_pair_sse41(upper, prev, lower, n, 3);
}
__attribute__((target("sse4.1"))) static void unfilter_paeth_pair_sse41_4(unsigned char *upper,
                                                                          const unsigned char *prev,
                                                                          unsigned char *lower, size_t n) {
    unfilter_paeth_pair_sse41(upper, prev, lower, n, 4);
}
#endif

// One copy per pixel size, so the pixel loads and stores compile to fixed-size moves.
static void unfilter_sub_sse2_3(unsigned char *row, size_t n) { unfilter_sub_sse2(row, n, 3); }
static void unfilter_sub_sse2_4(unsigned char *row, size_t n) { unfilter_sub_sse2(row, n, 4); }
static void unfilter_avg_sse2_3(unsigned char *row, const unsigned char *prev, size_t n) {
    unfilter_avg_sse2(row, prev, n, 3);
}
static void unfilter_avg_sse2_4(unsigned char *row, const unsigned char *prev, size_t n) {
    unfilter_avg_sse2(row, prev, n, 4);
}
static void unfilter_paeth_sse2_3(unsigned char *row, const unsigned char *prev, size_t n) {
    unfilter_paeth_sse2(row, prev, n, 3);
}
static void unfilter_paeth_sse2_4(unsigned char *row, const unsigned char *prev, size_t n) {
    unfilter_paeth_sse2(row, prev, n, 4);
}
#endif

int pngshim_unfilter_row(int filter, unsigned char *row, const unsigned char *prev, size_t row_bytes, int bpp) {
    // The first row's missing neighbour row is all zero: up is none, Paeth is sub.
    if (prev == NULL) {
        if (filter == 2) filter = 0;
        if (filter == 4) filter = 1;
    }
#if defined(__SSE2__)
    int wide = bpp == 3 || bpp == 4;
#else
    int wide = 0;
#endif
    switch (filter) {
    case 0: return 0;
    case 1:
#if defined(__SSE2__)
        if (wide) {
            if (bpp == 3) unfilter_sub_sse2_3(row, row_bytes);
            else unfilter_sub_sse2_4(row, row_bytes);
            return 0;
        }
#endif
        unfilter_sub(row, row_bytes, bpp);
        return 0;
    case 2: unfilter_up(row, prev, row_bytes); return 0;
    case 3:
#if defined(__SSE2__)
        if (wide && prev != NULL) {
            if (bpp == 3) unfilter_avg_sse2_3(row, prev, row_bytes);
            else unfilter_avg_sse2_4(row, prev, row_bytes);
            return 0;
        }
#endif
        unfilter_avg(row, prev, row_bytes, bpp);
        return 0;
    case 4:
#if defined(__SSE2__)
        if (wide) {
#if defined(PNGSHIM_HAVE_SSE41_KERNELS)
            if (has_sse41()) {
                if (bpp == 3) unfilter_paeth_sse41_3(row, prev, row_bytes);
                else unfilter_paeth_sse41_4(row, prev, row_bytes);
                return 0;
            }
#endif
            if (bpp == 3) unfilter_paeth_sse2_3(row, prev, row_bytes);
            else unfilter_paeth_sse2_4(row, prev, row_bytes);
            return 0;
        }
#endif
        unfilter_paeth(row, prev, row_bytes, bpp);
        return 0;
    default: (void)wide; return -1;
    }
}

int pngshim_unfilter_rows(unsigned char *first, size_t stride, const unsigned char *prev, uint32_t count,
                          size_t row_bytes, int bpp) {
    for (uint32_t i = 0; i < count;) {
        unsigned char *row = first + (size_t)i * stride;
        const unsigned char *above = i > 0 ? row - stride + 1 : prev;
#if defined(PNGSHIM_HAVE_SSE41_KERNELS)
        if (row[0] == 4 && above != NULL && i + 1 < count && row[stride] == 4 && (bpp == 3 || bpp == 4) &&
            has_sse41()) {
            if (bpp == 3) unfilter_paeth_pair_sse41_3(row + 1, above, row + stride + 1, row_bytes);
            else unfilter_paeth_pair_sse41_4(row + 1, above, row + stride + 1, row_bytes);
            i += 2;
            continue;
        }
#endif
        if (pngshim_unfilter_row(row[0], row + 1, above, row_bytes, bpp) != 0) return -1;
        i += 1;
    }
    return 0;
}

// MARK: - Filtering (encoder)

static void filter_sub(const unsigned char *row, size_t n, int bpp, unsigned char *out) {
    size_t i = 0;
    for (; i < (size_t)bpp && i < n; i++) out[i] = row[i];
    for (; i < n; i++) out[i] = (unsigned char)(row[i] - row[i - (size_t)bpp]);
}

static void filter_up(const unsigned char *row, const unsigned char *prev, size_t n, unsigned char *out) {
    for (size_t i = 0; i < n; i++) out[i] = (unsigned char)(row[i] - prev[i]);
}

static void filter_avg(const unsigned char *row, const unsigned char *prev, size_t n, int bpp, unsigned char *out) {
    size_t i = 0;
    for (; i < (size_t)bpp && i < n; i++) out[i] = (unsigned char)(row[i] - (prev[i] >> 1));
    for (; i < n; i++) out[i] = (unsigned char)(row[i] - ((row[i - (size_t)bpp] + prev[i]) >> 1));
}

static void filter_paeth(const unsigned char *row, const unsigned char *prev, size_t n, int bpp,
                         unsigned char *out) {
    size_t i = 0;
    for (; i < (size_t)bpp && i < n; i++) out[i] = (unsigned char)(row[i] - prev[i]);
    for (; i < n; i++) {
        int a = row[i - (size_t)bpp], b = prev[i], c = prev[i - (size_t)bpp];
        int pa = b - c, pb = a - c, pc = pa + pb;
        pa = abs(pa);
        pb = abs(pb);
        pc = abs(pc);
        int predictor = (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
        out[i] = (unsigned char)(row[i] - predictor);
    }
}

// The sum of the bytes' magnitudes as signed values: small residuals (near 0 or 255) cost little.
static uint64_t residual_cost(const unsigned char *bytes, size_t n) {
    uint64_t sum = 0;
    size_t i = 0;
#if defined(__SSE2__)
    // |v| as a signed byte is min(v, 256 - v); psadbw adds 8 of them per 64-bit lane.
    const __m128i zero = _mm_setzero_si128();
    __m128i total = zero;
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(bytes + i));
        __m128i magnitude = _mm_min_epu8(v, _mm_sub_epi8(zero, v));
        total = _mm_add_epi64(total, _mm_sad_epu8(magnitude, zero));
    }
    sum = (uint64_t)_mm_cvtsi128_si64(total) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(total, total));
#endif
    for (; i < n; i++) {
        unsigned v = bytes[i];
        sum += v < 128 ? v : 256 - v;
    }
    return sum;
}

static void filter_with(int filter, const unsigned char *row, const unsigned char *prev, size_t n, int bpp,
                        unsigned char *out) {
    switch (filter) {
    case 1: filter_sub(row, n, bpp, out); break;
    case 2: filter_up(row, prev, n, out); break;
    case 3: filter_avg(row, prev, n, bpp, out); break;
    case 4: filter_paeth(row, prev, n, bpp, out); break;
    default: memcpy(out, row, n); break;
    }
}

int pngshim_filter_row(int mode, const unsigned char *row, const unsigned char *prev, size_t row_bytes, int bpp,
                       unsigned char *out, unsigned char *scratch) {
    int filter = mode;
    if (mode > PNGSHIM_FILTER_FIXED_MAX) {
        // Without a row above, up is none and Paeth is sub; average still differs (half the left neighbour).
        uint64_t best = residual_cost(row, row_bytes);
        filter = 0;
        for (int candidate = 1; candidate <= 4; candidate++) {
            if (prev == NULL && (candidate == 2 || candidate == 4)) continue;
            unsigned char *trial = scratch + (size_t)(candidate - 1) * row_bytes;
            if (prev == NULL && candidate == 3) {
                // Average against a zero row: prev's bytes are all 0, which filter_avg reads one by one.
                size_t i = 0;
                for (; i < (size_t)bpp && i < row_bytes; i++) trial[i] = row[i];
                for (; i < row_bytes; i++) trial[i] = (unsigned char)(row[i] - (row[i - (size_t)bpp] >> 1));
            } else {
                filter_with(candidate, row, prev, row_bytes, bpp, trial);
            }
            uint64_t cost = residual_cost(trial, row_bytes);
            if (cost < best) {
                best = cost;
                filter = candidate;
            }
        }
        out[0] = (unsigned char)filter;
        if (filter == 0) {
            memcpy(out + 1, row, row_bytes);
        } else {
            memcpy(out + 1, scratch + (size_t)(filter - 1) * row_bytes, row_bytes);
        }
        return filter;
    }
    if (prev == NULL && (filter == 2 || filter == 4 || filter == 3)) {
        // The same bytes as against a zero row; written as that filter type so a decoder sees what was asked.
        out[0] = (unsigned char)filter;
        if (filter == 3) {
            size_t i = 0;
            for (; i < (size_t)bpp && i < row_bytes; i++) out[1 + i] = row[i];
            for (; i < row_bytes; i++) out[1 + i] = (unsigned char)(row[i] - (row[i - (size_t)bpp] >> 1));
        } else if (filter == 2) {
            memcpy(out + 1, row, row_bytes);
        } else {
            filter_sub(row, row_bytes, bpp, out + 1);
        }
        return filter;
    }
    out[0] = (unsigned char)filter;
    filter_with(filter, row, prev, row_bytes, bpp, out + 1);
    return filter;
}
