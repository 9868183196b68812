/* fuzz_state.c - libFuzzer target over g4_session_load's reader (`make fuzz-state`): every
 * input is a state file read through state_load_fp (fmemopen) into a session of a tiny fixed
 * model. A load that succeeds is followed by one eval on the loaded cache (its values may be
 * any bits, including NaN: nothing may crash); a load that fails must leave the session as it
 * was (checked against a copy of its position). LLVMFuzzerInitialize writes a valid state of
 * that model into $G4_FUZZ_SEED_DIR (when set) as the seed. Crashers go to
 * tests/fuzz/corpus-state/ and are replayed by `g4-test batch`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "testgen.h"

static g4_model *fz_m;
static g4_session *fz_s;
static void *fz_buf;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    char err[256];
    size_t len;
    g4_testgen_opts o = { .n_layer = 4, .full_every = 2, .n_shared = 2, .n_embd = 32, .n_head = 2, .head_dim_swa = 16,
                          .head_dim_full = 32, .n_ff = 32, .window = 4, .n_vocab = 400, .n_ctx = 64 };
    if (testgen_write_mem(&fz_buf, &len, &o, err, sizeof err) != G4_OK) abort();
    g4_model_opts mo = { .n_threads = 1, .kernels = "scalar" };
    if (model_open_mem(&fz_m, fz_buf, len, "fuzz.gguf", &mo, err, sizeof err) != G4_OK) abort();
    g4_session_opts so = { .n_ctx = 64, .n_ubatch = 8 };
    if (g4_session_create(&fz_s, fz_m, &so, err, sizeof err) != G4_OK) abort();
    const char *dir = getenv("G4_FUZZ_SEED_DIR");
    if (dir) {
        int32_t p[20];
        for (int i = 0; i < 20; i++) p[i] = 2 + 17 * i % 390;
        char path[512];
        snprintf(path, sizeof path, "%s/valid.state", dir);
        if (g4_session_eval(fz_s, p, 20) != G4_OK || g4_session_save(fz_s, path, p, 20) != G4_OK) abort();
        g4_session_reset(fz_s);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    g4_session_reset(fz_s);
    FILE *f = fmemopen((void *)(uintptr_t)data, size ? size : 1, "rb");
    if (!f) return 0;
    if (!size) fgetc(f); /* an empty input: fmemopen needs a size >= 1 */
    int32_t toks[64];
    size_t n = 0;
    g4_status st = state_load_fp(fz_s, f, "fuzz.state", toks, 64, &n);
    fclose(f);
    if (st == G4_OK) {
        if (n > (size_t)g4_session_n_past(fz_s)) abort();
        for (size_t i = 0; i < n; i++)
            if (toks[i] < 0 || toks[i] >= g4_model_n_vocab(fz_m)) abort();
        const int32_t t = 5;
        if (g4_session_n_past(fz_s) < g4_session_n_ctx(fz_s) && g4_session_eval(fz_s, &t, 1) != G4_OK) abort();
    } else if (g4_session_n_past(fz_s) != 0 || g4_session_errmsg(fz_s)[0] == '\0') {
        abort(); /* refused: unchanged (still empty) and a message */
    }
    return 0;
}
