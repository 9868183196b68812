/* g4-mkmodel - writes a random, well-conditioned Gemma 4 GGUF with the project's own writer.
 * The weights are random: the file exercises every code path but "says" nothing.
 *
 *   g4-mkmodel OUT.gguf [--type T] [--embd-type T] [--q4_k_m] [--twin] [--fast] [--e2b] [--layers N]
 *              [--embd N] [--heads N] [--kv-heads N] [--kv-heads-full N] [--head-dim N]
 *              [--head-dim-full N] [--ff N] [--ff-shared N] [--shared N] [--full-every N]
 *              [--ple N] [--window N] [--vocab N] [--ctx N] [--softcap X] [--untied] [--k-eq-v]
 *              [--shared-kv-tensors] [--no-layer-scale] [--seed N] [--script TEXT [--script-loop]]
 *              [--assistant [--asst-embd N] [--asst-layers N] [--asst-heads N] [--asst-ff N]]
 *              [--26b] [--31b] [--k-eq-v-full] [--experts N] [--experts-used K] [--ff-exp N]
 *              [--moe-first N] [--moe-split] [--moe-scales] [--exp-type T]
 * --ple 0 / --shared 0 / --softcap 0 turn those features off. --fast draws each tensor's rows
 * from 64 generated ones (for timing-only models such as `--e2b --q4_k_m --fast`). --script TEXT
 * writes a test device: a model that answers TEXT to any prompt ending in a newline (testgen.h);
 * with --script-loop it repeats TEXT forever (a device for n-gram drafters). With --fast as
 * well, only the embeddings and the head are drawn row by row (an E2B-sized device in minutes).
 * --assistant writes, instead of the target the other flags describe, a gemma4-assistant (MTP
 * draft model) for it: `g4-mkmodel t.gguf ARGS` and `g4-mkmodel a.gguf ARGS --assistant` are
 * a pair (same ARGS). With --e2b, --assistant takes the E2B assistant shape (256 wide, 4
 * heads, FFN 2048, 4 layers) unless --asst-* say otherwise.
 * --26b / --31b set the 26B-A4B (MoE) / 31B shapes; later options override single values
 * (e.g. `--26b --layers 6`). --experts N makes layers >= --moe-first MoE layers with N experts
 * (top --experts-used, width --ff-exp), fused gate/up unless --moe-split.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "testgen.h"

static int usage(void) {
    fprintf(stderr, "usage: g4-mkmodel OUT.gguf [--type T] [--embd-type T] [--q4_k_m] [--twin] [--fast] [--e2b] [--layers N]\n"
                    "       [--embd N] [--heads N] [--kv-heads N] [--kv-heads-full N] [--head-dim N] [--head-dim-full N]\n"
                    "       [--ff N] [--ff-shared N] [--shared N] [--full-every N] [--ple N] [--window N] [--vocab N]\n"
                    "       [--ctx N] [--softcap X] [--untied] [--k-eq-v] [--shared-kv-tensors] [--no-layer-scale] [--seed N]\n"
                    "       [--script TEXT [--script-loop]]   (a test device: the model answers TEXT after a newline,\n"
                    "                         repeated forever with --script-loop; src/testgen.h)\n"
                    "       [--assistant [--asst-embd N] [--asst-layers N] [--asst-heads N] [--asst-ff N]]\n"
                    "       [--26b] [--31b] [--k-eq-v-full] [--experts N] [--experts-used K] [--ff-exp N] [--moe-first N]\n"
                    "       [--moe-split] [--moe-scales] [--exp-type T]\n");
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') return usage();
    g4_testgen_opts o;
    memset(&o, 0, sizeof o);
    int e2b = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define INT(flag, field) if (!strcmp(a, flag)) { if (!v) return usage(); o.field = atoi(v); i++; if (o.field == 0) o.field = -1; continue; }
        INT("--layers", n_layer) INT("--embd", n_embd) INT("--heads", n_head) INT("--kv-heads", n_head_kv)
        INT("--kv-heads-full", n_head_kv_full) INT("--head-dim", head_dim_swa) INT("--head-dim-full", head_dim_full)
        INT("--ff", n_ff) INT("--ff-shared", n_ff_shared) INT("--shared", n_shared) INT("--full-every", full_every)
        INT("--ple", n_per_layer) INT("--window", window) INT("--vocab", n_vocab) INT("--ctx", n_ctx)
        INT("--asst-embd", asst_n_embd) INT("--asst-layers", asst_n_layer) INT("--asst-heads", asst_n_head)
        INT("--asst-ff", asst_n_ff)
        INT("--experts", n_expert) INT("--experts-used", n_expert_used) INT("--ff-exp", n_ff_exp)
#undef INT
        if (!strcmp(a, "--moe-first") && v) { o.moe_first = atoi(v); i++; continue; }
        if (!strcmp(a, "--assistant")) { o.assistant = 1; continue; }
        if (!strcmp(a, "--script-loop")) { o.script_loop = 1; continue; }
        if (!strcmp(a, "--seed") && v) { o.seed = strtoull(v, NULL, 10); i++; continue; }
        if (!strcmp(a, "--script") && v) { o.script = v; i++; continue; }
        if (!strcmp(a, "--softcap") && v) { o.softcap = (float)atof(v); if (o.softcap == 0) o.softcap = -1; i++; continue; }
        if ((!strcmp(a, "--type") || !strcmp(a, "--embd-type") || !strcmp(a, "--exp-type")) && v) {
            int t = quant_type_from_name(v);
            if (t < 0) { fprintf(stderr, "g4-mkmodel: unknown type '%s'\n", v); return 2; }
            if (!strcmp(a, "--type")) o.wtype = (uint32_t)t;
            else if (!strcmp(a, "--exp-type")) o.exp_type = (uint32_t)t;
            else o.embd_type = (uint32_t)t;
            i++;
            continue;
        }
        if (!strcmp(a, "--q4_k_m")) { o.q4_k_m = 1; continue; }
        if (!strcmp(a, "--twin")) { o.f32_twin = 1; continue; }
        if (!strcmp(a, "--fast")) { o.fast_fill = 1; continue; }
        if (!strcmp(a, "--untied")) { o.untied = 1; continue; }
        if (!strcmp(a, "--k-eq-v")) { o.k_eq_v = 1; continue; }
        if (!strcmp(a, "--shared-kv-tensors")) { o.shared_kv_tensors = 1; continue; }
        if (!strcmp(a, "--no-layer-scale")) { o.no_layer_scale = 1; continue; }
        if (!strcmp(a, "--e2b")) { testgen_e2b(&o); e2b = 1; continue; }
        if (!strcmp(a, "--26b")) { testgen_26b(&o); continue; }
        if (!strcmp(a, "--31b")) { testgen_31b(&o); continue; }
        if (!strcmp(a, "--k-eq-v-full")) { o.k_eq_v_full = 1; continue; }
        if (!strcmp(a, "--moe-split")) { o.moe_split = 1; continue; }
        if (!strcmp(a, "--moe-scales")) { o.moe_scales = 1; continue; }
        fprintf(stderr, "g4-mkmodel: unknown option '%s'\n", a);
        return usage();
    }
    if (e2b && o.assistant) { /* the E2B assistant's shape, where --asst-* did not set it */
        g4_testgen_opts d = o;
        testgen_e2b_assistant(&d);
        if (!o.asst_n_embd) o.asst_n_embd = d.asst_n_embd;
        if (!o.asst_n_layer) o.asst_n_layer = d.asst_n_layer;
        if (!o.asst_n_head) o.asst_n_head = d.asst_n_head;
        if (!o.asst_n_ff) o.asst_n_ff = d.asst_n_ff;
    }
    /* --ff-shared 0 / --kv-heads-full 0 mean "same as the others": the field stays 0 */
    if (o.n_ff_shared < 0) o.n_ff_shared = 0;
    if (o.n_head_kv_full < 0) o.n_head_kv_full = 0;
    if (o.n_expert < 0) o.n_expert = 0;
    char err[512];
    if (testgen_write(argv[1], &o, err, sizeof err) != G4_OK) {
        fprintf(stderr, "g4-mkmodel: %s\n", err);
        return 1;
    }
    return 0;
}
