/* ckpt.c - a slot's context checkpoint in a file (ckpt.h). One file per slot in a private
 * directory (mode 0700) made at start and removed at exit; a checkpoint replaces the last. */
#include "ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ckpt_dir_create(char *dir, size_t cap, char *err, size_t errlen) {
    const char *t = getenv("TMPDIR");
    if (!t || !*t) t = "/tmp";
    if ((size_t)snprintf(dir, cap, "%s/g4serve.XXXXXX", t) >= cap) { snprintf(err, errlen, "TMPDIR is too long"); return -1; }
    if (!mkdtemp(dir)) { snprintf(err, errlen, "cannot make a checkpoint directory in %s: %s", t, strerror(errno)); dir[0] = 0; return -1; }
    return 0;
}

void ckpt_dir_remove(const char *dir) {
    if (!dir || !*dir) return;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, "slot-", 5) != 0) continue;
        char p[1024];
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < sizeof p) unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

int ckpt_init(ckpt *c, const char *dir, int slot, int32_t n_ctx) {
    memset(c, 0, sizeof *c);
    if (!dir || !*dir) return 0;
    snprintf(c->path, sizeof c->path, "%s/slot-%d.state", dir, slot);
    c->toks = malloc((size_t)n_ctx * sizeof *c->toks);
    c->cap = c->toks ? n_ctx : 0;
    return c->toks ? 0 : -1;
}

void ckpt_free(ckpt *c) {
    if (c->path[0]) unlink(c->path);
    free(c->toks);
    memset(c, 0, sizeof *c);
}

int ckpt_save(ckpt *c, g4_session *s, const int32_t *toks) {
    if (!c->path[0]) return -1;
    c->n = 0;
    int32_t n = g4_session_n_past(s);
    if (n <= 0 || n > c->cap || g4_session_save(s, c->path, toks, (size_t)n) != G4_OK) return -1;
    memcpy(c->toks, toks, (size_t)n * sizeof *toks);
    c->n = n;
    return 0;
}

int32_t ckpt_restore(ckpt *c, g4_session *s, const int32_t *prompt, size_t n_prompt, int32_t have, int32_t keep_max,
                     int32_t slack, int32_t *toks_out) {
    if (!c->path[0] || c->n <= 0) return -1;
    size_t m = (size_t)c->n < n_prompt ? (size_t)c->n : n_prompt, k = 0;
    while (k < m && c->toks[k] == prompt[k]) k++;
    int32_t want = (int32_t)k < keep_max ? (int32_t)k : keep_max;
    if (want <= have || c->n - want > slack) return -1;
    size_t got = 0; /* the file's ids land in c->toks: the ids saved, unless it was replaced */
    if (g4_session_load(s, c->path, c->toks, (size_t)c->cap, &got) != G4_OK) { c->n = 0; return -1; } /* s unchanged */
    if (got != (size_t)c->n) { /* loaded, but not what was saved: s now holds nothing usable */
        c->n = 0;
        g4_session_truncate(s, 0);
        return 0;
    }
    int32_t pos = g4_session_truncate(s, want);
    memcpy(toks_out, c->toks, (size_t)pos * sizeof *toks_out);
    return pos;
}
