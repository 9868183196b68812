/* fuzz_gguf.c - libFuzzer target over the GGUF reader and model validation (`make fuzz`).
 * Abort, leak and huge allocation count as failures (reliability.md §5.3): the allocator
 * hook refuses single requests above 64 MiB plus the input size and tracks leaks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "g4_impl.h"
#include "gguf.h"

typedef struct budget { size_t limit, live; } budget;

static void *fz_alloc(void *ud, void *ptr, size_t old, size_t nsz) {
    budget *b = ud;
    if (nsz == 0) { free(ptr); b->live -= old; return NULL; }
    if (nsz > b->limit) return NULL;
    void *p = realloc(ptr, nsz);
    if (p) b->live += nsz - old;
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    budget b = { size + ((size_t)64 << 20), 0 };
    char err[512];
    gguf_alloc ga = { fz_alloc, &b };
    gguf_file *f = NULL;
    if (gguf_open_mem(&f, data, size, "fuzz.gguf", &ga, err, sizeof err) == G4_OK) {
        /* touch every parsed value so the sanitizers see any bad pointer */
        volatile size_t sink = 0;
        for (size_t i = 0; i < gguf_n_kv(f); i++) {
            const gguf_kv *kv = gguf_kv_at(f, i);
            sink += kv->key_len;
            if (kv->type == GGUF_STRING && kv->str_len) sink += (uint8_t)kv->str[kv->str_len - 1];
            if (kv->type == GGUF_ARRAY && kv->arr_type == GGUF_STRING && kv->n) {
                uint64_t l;
                sink += (uint8_t)gguf_arr_str(kv, kv->n - 1, &l)[0] + l;
            }
        }
        for (size_t i = 0; i < gguf_n_tensors(f); i++) {
            const gguf_tensor *t = gguf_tensor_at(f, i);
            if (t->nbytes) sink += t->data[0] + t->data[t->nbytes - 1];
        }
        (void)sink;
        gguf_close(f);
    }
    g4_model_opts mo = {0};
    mo.n_threads = 1;
    mo.kernels = "scalar";
    mo.alloc = fz_alloc;
    mo.alloc_ud = &b;
    g4_model *m = NULL;
    if (model_open_mem(&m, data, size, "fuzz.gguf", &mo, err, sizeof err) == G4_OK) g4_model_close(m);
    if (b.live != 0) abort(); /* a leak through the hook */
    return 0;
}
