/* test_main.c - runs the registered test groups: `g4-test [group...]`. */
#include "t.h"

#include <stdlib.h>
#include <string.h>

#define T_MAX_GROUPS 128

static struct { const char *name; t_fn fn; } groups[T_MAX_GROUPS];
static int n_groups;
const char *t_current_group = "";
long t_n_pass, t_n_fail;

void t_register(const char *name, t_fn fn) {
    if (n_groups < T_MAX_GROUPS) {
        groups[n_groups].name = name;
        groups[n_groups].fn = fn;
        n_groups++;
    }
}

void t_result(int ok, const char *file, int line, const char *expr) {
    if (ok) { t_n_pass++; return; }
    t_n_fail++;
    fprintf(stderr, "FAIL [%s] %s:%d: %s\n", t_current_group, file, line, expr);
}

static int cmp_group(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv) {
    /* run in name order so output is stable whatever the link order */
    const char *names[T_MAX_GROUPS];
    for (int i = 0; i < n_groups; i++) names[i] = groups[i].name;
    qsort(names, (size_t)n_groups, sizeof names[0], cmp_group);
    int ran = 0;
    for (int k = 0; k < n_groups; k++) {
        int i = 0;
        while (strcmp(groups[i].name, names[k]) != 0) i++;
        int want = argc <= 1;
        for (int a = 1; a < argc; a++) if (strcmp(argv[a], groups[i].name) == 0) want = 1;
        if (!want) continue;
        long p0 = t_n_pass, f0 = t_n_fail;
        t_current_group = groups[i].name;
        groups[i].fn();
        ran++;
        fprintf(stderr, "  %-12s %ld passed, %ld failed\n", groups[i].name, t_n_pass - p0, t_n_fail - f0);
    }
    if (ran == 0) {
        fprintf(stderr, "g4-test: no such group\n");
        return 2;
    }
    printf("%ld passed, %ld failed\n", t_n_pass, t_n_fail);
    return t_n_fail ? 1 : 0;
}
