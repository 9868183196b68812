/* g4-oracle-pair.c - which pair a default run compares on this host, for the oracle tests.
 *
 *   build/g4-oracle-pair [LIBDIR]
 *
 * Prints one line "G4_TABLE VARIANT": the kernel table g4 picks here by default (kern_select
 * with $G4_ISA ignored) and the CPU variant llama.cpp's backend loader picks from LIBDIR (a
 * folder of libggml-cpu-<variant>.so files such as node-llama-cpp's bins/linux-x64): like
 * ggml_backend_load_best, every libggml-cpu-*.so there is dlopen'ed and its exported
 * ggml_backend_score() asked; the highest non-zero score wins (first found on a tie, as ggml
 * iterates the folder). VARIANT is "-" without LIBDIR or when no library scores above 0.
 * On an AVX2-only x86 host the answer is "avx2 haswell" (the pinned pair of the oracle tests);
 * on Zen 4 "avx512 zen4". Exit status 0, or 2 on bad usage.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern/kern.h"

/* glibc before 2.34 keeps dlopen in libdl, which the Makefile's tools rule does not link */
#if defined(__linux__) && defined(__GNUC__)
#pragma weak dlopen
#pragma weak dlsym
#pragma weak dlclose
#endif

static const char PREFIX[] = "libggml-cpu-", SUFFIX[] = ".so";

/* the variant name of "libggml-cpu-<variant>.so", or NULL */
static const char *variant_of(const char *file, size_t *len) {
    const size_t n = strlen(file), np = sizeof PREFIX - 1, ns = sizeof SUFFIX - 1;
    if (n <= np + ns || strncmp(file, PREFIX, np) != 0 || strcmp(file + n - ns, SUFFIX) != 0) return NULL;
    *len = n - np - ns;
    return file + np;
}

int main(int argc, char **argv) {
    if (argc > 2 || (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
        fprintf(stderr, "usage: g4-oracle-pair [LIBDIR]\n");
        return 2;
    }
    unsetenv("G4_ISA");
    char err[128];
    const g4_kern *k = kern_select(NULL, err, sizeof err);
    char best[256] = "-";
    int best_score = 0;
    DIR *d = argc == 2 && dlopen ? opendir(argv[1]) : NULL;
    if (d) {
        char path[4096];
        /* the base library first, global: the variants need its symbols */
        snprintf(path, sizeof path, "%s/libggml-base.so", argv[1]);
        void *base = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        for (struct dirent *e; base && (e = readdir(d)) != NULL;) {
            size_t vl;
            const char *v = variant_of(e->d_name, &vl);
            if (!v || vl >= sizeof best) continue;
            snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
            void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (!h) continue;
            int (*score)(void);
            void *p = dlsym(h, "ggml_backend_score");
            memcpy(&score, &p, sizeof score);
            const int s = p ? score() : 0;
            if (s > best_score) {
                best_score = s;
                memcpy(best, v, vl);
                best[vl] = '\0';
            }
            dlclose(h);
        }
        closedir(d);
    }
    printf("%s %s\n", k ? k->name : "scalar", best);
    return 0;
}
