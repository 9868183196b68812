/* ngram.c - drafters that need no second model: prompt lookup over the session's own tokens.
 *
 * Owns: llama.cpp v0.5.0's ngram-simple rule (common/ngram-map.cpp common_ngram_simple_draft),
 * reproduced so that g4 and llama.cpp given the same tokens draft the same tokens (their
 * acceptance is then the same, which makes speed comparisons fair).
 * Does not own: verification or the history (spec.c).
 */
#include "spec.h"

size_t ngram_simple_draft(const int32_t *hist, size_t n_hist, int32_t last, int size_n, int size_m, int32_t *draft,
                          size_t max) {
    const size_t n = (size_t)size_n, m = (size_t)size_m;
    if (n == 0 || m == 0 || max == 0) return 0;
    /* ref: common_ngram_simple_draft: needs more than n + m + 1 tokens of history */
    if (n_hist <= n + m + 1) return 0;
    /* the pattern: hist[n_hist - n + 1 .. n_hist) followed by last (n tokens) */
    const int32_t *tail = hist + (n_hist - n + 1);
    /* search backwards from the latest start that is not the current position, down to 1
     * (start 0 means "no match" there and is never tried) */
    size_t match = 0;
    for (size_t j = n_hist - n - 1; j > 0; j--) {
        size_t k = 0;
        while (k + 1 < n && hist[j + k] == tail[k]) k++;
        if (k + 1 == n && hist[j + n - 1] == last) { match = j; break; }
    }
    if (match == 0) return 0;
    size_t copy = n_hist - (match + n);
    if (copy > m) copy = m;
    if (copy < n) return 0; /* llama.cpp compares the draft length with size_n here */
    if (copy > max) copy = max;
    for (size_t j = 0; j < copy; j++) draft[j] = hist[match + n + j];
    return copy;
}
