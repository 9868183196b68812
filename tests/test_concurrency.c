/* test_concurrency.c - g4.h's promise: sessions of one model may eval from different threads
 * (they share the model's pool; their evals run one after another). Two sessions evaluating
 * at the same time must give exactly the logits each gives alone. Run under `make tsan` too. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "g4_impl.h"
#include "testgen.h"
#include "t.h"

typedef struct job {
    g4_session *s;
    int32_t     toks[48];
    int         n;
    float      *out;   /* [n_vocab] logits after the whole sequence */
    g4_status   st;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    j->st = g4_session_eval(j->s, j->toks, (size_t)j->n - 8);
    for (int i = j->n - 8; i < j->n && j->st == G4_OK; i++) j->st = g4_session_eval(j->s, &j->toks[i], 1);
    const float *l = g4_session_logits(j->s);
    if (j->st == G4_OK && l) memcpy(j->out, l, sizeof(float) * 512);
    return NULL;
}

T_GROUP(concurrency) {
    void *buf;
    size_t len;
    char err[512];
    g4_testgen_opts o = { .wtype = 8 /* q8_0 */, .n_per_layer = 32 };
    if (testgen_write_mem(&buf, &len, &o, err, sizeof err) != G4_OK) { T_CHECKF(0, "%s", err); return; }
    g4_model_opts mo = {0};
    mo.n_threads = 2;
    g4_model *m = NULL;
    if (model_open_mem(&m, buf, len, "c.gguf", &mo, err, sizeof err) != G4_OK) { T_CHECKF(0, "%s", err); free(buf); return; }
    int V = g4_model_n_vocab(m);
    T_CHECK(V == 512);
    job jobs[2];
    float *alone[2];
    for (int k = 0; k < 2; k++) {
        memset(&jobs[k], 0, sizeof jobs[k]);
        jobs[k].n = 48;
        for (int i = 0; i < 48; i++) jobs[k].toks[i] = 2 + (i * (7 + 5 * k) + 3 * k) % (V - 2);
        jobs[k].out = calloc((size_t)V, sizeof(float));
        alone[k] = calloc((size_t)V, sizeof(float));
        g4_session_opts so = {0};
        so.n_ctx = 128;
        so.n_ubatch = 16;
        T_CHECK(g4_session_create(&jobs[k].s, m, &so, err, sizeof err) == G4_OK);
    }
    /* each alone, one after the other */
    for (int k = 0; k < 2; k++) {
        run_job(&jobs[k]);
        T_CHECK(jobs[k].st == G4_OK);
        memcpy(alone[k], jobs[k].out, sizeof(float) * (size_t)V);
        g4_session_reset(jobs[k].s);
    }
    /* both at once, several times */
    for (int rep = 0; rep < 4; rep++) {
        pthread_t th[2];
        for (int k = 0; k < 2; k++) pthread_create(&th[k], NULL, run_job, &jobs[k]);
        for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
        for (int k = 0; k < 2; k++) {
            T_CHECK(jobs[k].st == G4_OK);
            T_CHECKF(memcmp(alone[k], jobs[k].out, sizeof(float) * (size_t)V) == 0, "session %d rep %d differs", k, rep);
            g4_session_reset(jobs[k].s);
        }
    }
    for (int k = 0; k < 2; k++) {
        g4_session_free(jobs[k].s);
        free(jobs[k].out);
        free(alone[k]);
    }
    g4_model_close(m);
    free(buf);
}
