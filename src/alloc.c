/* alloc.c - every allocation of the library goes through the caller's hook (Lua style), so
 * tests can fail the Nth allocation and budgets can be enforced. */
#include "g4_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

void *g4_libc_alloc(void *ud, void *ptr, size_t old_size, size_t new_size) {
    (void)ud; (void)old_size;
    if (new_size == 0) { free(ptr); return NULL; }
    return realloc(ptr, new_size);
}

void g4_allocator_init(g4_allocator *a, g4_alloc_fn fn, void *ud) {
    a->fn = fn ? fn : g4_libc_alloc;
    a->ud = fn ? ud : NULL;
}

void *g4_malloc(const g4_allocator *a, size_t n) {
    if (n == 0) return NULL;
    return a->fn(a->ud, NULL, 0, n);
}

void *g4_calloc(const g4_allocator *a, size_t n, size_t size) {
    uint64_t total;
    if (g4_mul_ovf(n, size, &total) || total == 0 || total > SIZE_MAX) return NULL;
    unsigned char *p = g4_malloc(a, (size_t)total);
    if (p) memset(p, 0, (size_t)total);
    return p;
}

void *g4_malloc_al64(const g4_allocator *a, size_t n, void **raw) {
    *raw = NULL;
    if (n == 0 || n > SIZE_MAX - 63) return NULL;
    unsigned char *p = g4_malloc(a, n + 63);
    if (!p) return NULL;
    *raw = p;
    return p + ((64 - (uintptr_t)p % 64) % 64);
}

void g4_want_huge_pages(const g4_allocator *al, void *p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (!p || al->fn != g4_libc_alloc) return;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + n) & ~(huge - 1);
    if (e > a) (void)madvise((void *)a, (size_t)(e - a), MADV_HUGEPAGE);
#else
    (void)al; (void)p; (void)n;
#endif
}

int g4_huge_pages_on(const g4_allocator *al) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (al->fn != g4_libc_alloc) return 0;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return 0;
    char buf[128];
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, "[always]") != NULL || strstr(buf, "[madvise]") != NULL;
#else
    (void)al;
    return 0;
#endif
}

int64_t g4_mem_available(void) {
    const char *e = getenv("G4_MEM_AVAILABLE"); /* MiB, for tests */
    if (e && *e) {
        char *end;
        const unsigned long long v = strtoull(e, &end, 10);
        if (!*end && v <= (unsigned long long)(INT64_MAX >> 20)) return (int64_t)v << 20;
    }
#if defined(__linux__)
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[128];
    long long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
    fclose(f);
    return kib >= 0 && kib <= (INT64_MAX >> 10) ? (int64_t)kib << 10 : -1;
#else
    return -1;
#endif
}

void g4_free_al64(const g4_allocator *a, void *raw, size_t n) {
    if (raw) g4_free(a, raw, n + 63);
}

void g4_free(const g4_allocator *a, void *p, size_t n) {
    if (p) a->fn(a->ud, p, n, 0);
}
