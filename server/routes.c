/* routes.c - the endpoints of g4 serve: OpenAI's chat completions, completions and models,
 * plus /health, /metrics, /tokenize, /detokenize and the chat page at /.
 *
 * A generation request is validated (params.c), turned into a job and submitted to the
 * scheduler; the connection thread then waits for what the scheduler appends, checking
 * every 100 ms that the client is still there (a client that goes away cancels its job,
 * which frees the slot before the next step). Non-streaming answers are written once the job
 * ends; streaming ones as server-sent events, one chunk per release of text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "params.h"
#include "reply.h"
#include "srv.h"

/* ==== Helpers ==== */

static int path_is(const http_req *r, const char *p) {
    size_t n = strlen(p), tl = r->target_len;
    const char *q = memchr(r->target, '?', tl);
    if (q) tl = (size_t)(q - r->target);
    return tl == n && memcmp(r->target, p, n) == 0;
}

static int send_buf(conn *c, int status, buf *b) {
    if (b->oom) return respond_error(c, 503, NULL, NULL, "out of memory");
    return respond(c, status, "application/json", b->p, b->len, NULL);
}

static int auth_ok(srv *sv, const http_req *r) {
    if (!sv->api_key_len) return 1;
    const http_hdr *h = http_find(r, "authorization");
    if (!h || h->value_len < 7 || strncasecmp(h->value, "Bearer ", 7) != 0) return 0;
    const char *k = h->value + 7;
    size_t kl = h->value_len - 7;
    unsigned diff = (unsigned)(kl != sv->api_key_len);
    for (size_t i = 0; i < sv->api_key_len; i++) diff |= (unsigned)(unsigned char)(k[i < kl ? i : 0] ^ sv->api_key[i]); /* constant time */
    return diff == 0;
}

static int parse_body(conn *c, const http_req *r, g4_json **doc) {
    char err[256];
    if (r->body_len == 0) { respond_error(c, 400, NULL, "invalid_json", "the request body is empty (a JSON object expected)"); return -1; }
    if (g4_json_parse(doc, r->body, r->body_len, 64, err, sizeof err) != G4_OK) {
        respond_error(c, 400, NULL, "invalid_json", "invalid request body: %s", err);
        return -1;
    }
    if (g4_jv_type(g4_json_root(*doc)) != G4_JSON_OBJECT) {
        g4_json_free(*doc);
        *doc = NULL;
        respond_error(c, 400, NULL, "invalid_json", "the request body must be a JSON object");
        return -1;
    }
    return 0;
}

static void put_id(buf *b, srv *sv, const char *prefix) {
    uint64_t x = atomic_fetch_add(&sv->ids, 1) + (uint64_t)sv->created * 1000003u;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 29;
    buf_printf(b, "\"%s%016llx\"", prefix, (unsigned long long)x);
}

/* ==== Simple endpoints ==== */

static int get_models(conn *c) {
    srv *sv = c->sv;
    buf b = {0};
    buf_puts(&b, "{\"object\":\"list\",\"data\":[{\"id\":");
    buf_json_str(&b, sv->model_name, strlen(sv->model_name));
    buf_printf(&b, ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"gemma4.c\",\"meta\":{\"n_ctx_slot\":%d,"
                   "\"n_slots\":%d,\"n_vocab\":%d}}]}", (long long)sv->created, (int)sv->n_ctx_slot, sv->n_slots,
               (int)g4_model_n_vocab(sv->m));
    int rc = send_buf(c, 200, &b);
    buf_free(&b);
    return rc;
}

static int get_health(conn *c) {
    sched_stats st;
    sched_get_stats(c->sv->sc, &st);
    buf b = {0};
    buf_printf(&b, "{\"status\":\"ok\",\"slots_idle\":%d,\"slots_processing\":%d,\"queued\":%d}", st.slots - st.busy, st.busy, st.queued);
    int rc = send_buf(c, 200, &b);
    buf_free(&b);
    return rc;
}

static int get_metrics(conn *c) {
    buf b = {0};
    metrics_text(c->sv, &b);
    int rc = b.oom ? respond_error(c, 503, NULL, NULL, "out of memory")
                   : respond(c, 200, "text/plain; version=0.0.4", b.p, b.len, NULL);
    buf_free(&b);
    return rc;
}

static int post_tokenize(conn *c, const http_req *r) {
    g4_json *d = NULL;
    if (parse_body(c, r, &d) < 0) return 0;
    const g4_jv *root = g4_json_root(d);
    const g4_jv *ct = g4_jv_get(root, "content");
    size_t n;
    const char *s = g4_jv_str(ct, &n);
    int rc;
    if (!s) { rc = respond_error(c, 400, "content", "invalid_type", "content: expected a string"); g4_json_free(d); return rc; }
    int add = g4_jv_type(g4_jv_get(root, "add_special")) == G4_JSON_TRUE;
    int pieces = g4_jv_type(g4_jv_get(root, "with_pieces")) == G4_JSON_TRUE;
    int32_t *ids = NULL;
    size_t ni = 0;
    if (tokenize_text(c->sv, s, n, (add ? G4_TOK_ADD_BOS : 0) | G4_TOK_PARSE_SPECIAL, &ids, &ni) < 0) {
        g4_json_free(d);
        return respond_error(c, 503, NULL, NULL, "out of memory");
    }
    buf b = {0};
    buf_puts(&b, "{\"tokens\":[");
    for (size_t i = 0; i < ni; i++) {
        if (i) buf_puts(&b, ",");
        if (pieces) {
            char pc[1024];
            size_t pn = 0;
            g4_token_to_piece(c->sv->m, ids[i], G4_PIECE_SPECIAL, pc, sizeof pc, &pn);
            buf_printf(&b, "{\"id\":%d,\"piece\":", (int)ids[i]);
            buf_json_str(&b, pc, pn > sizeof pc ? 0 : pn);
            buf_puts(&b, "}");
        } else {
            buf_printf(&b, "%d", (int)ids[i]);
        }
    }
    buf_puts(&b, "]}");
    rc = send_buf(c, 200, &b);
    buf_free(&b);
    free(ids);
    g4_json_free(d);
    return rc;
}

static int post_detokenize(conn *c, const http_req *r) {
    g4_json *d = NULL;
    if (parse_body(c, r, &d) < 0) return 0;
    const g4_jv *t = g4_jv_get(g4_json_root(d), "tokens");
    int rc;
    if (g4_jv_type(t) != G4_JSON_ARRAY) { rc = respond_error(c, 400, "tokens", "invalid_type", "tokens: expected an array of token ids"); g4_json_free(d); return rc; }
    int32_t nv = g4_model_n_vocab(c->sv->m);
    g4_detok dt;
    memset(&dt, 0, sizeof dt);
    buf text = {0};
    for (size_t i = 0; i < g4_jv_len(t); i++) {
        int64_t id;
        if (!g4_jv_int(g4_jv_at(t, i), &id) || id < 0 || id >= nv) {
            buf_free(&text);
            g4_json_free(d);
            return respond_error(c, 400, "tokens", "invalid_value", "tokens[%zu]: expected a token id in [0, %d)", i, (int)nv);
        }
        char pc[1100];
        size_t k = g4_detok_push(&dt, c->sv->m, (int32_t)id, 0, pc, sizeof pc);
        buf_put(&text, pc, k);
    }
    char tail[64];
    size_t k = g4_detok_flush(&dt, tail, sizeof tail);
    buf_put(&text, tail, k);
    buf b = {0};
    buf_puts(&b, "{\"content\":");
    buf_json_str(&b, text.p ? text.p : "", text.len);
    buf_puts(&b, "}");
    rc = text.oom ? respond_error(c, 503, NULL, NULL, "out of memory") : send_buf(c, 200, &b);
    buf_free(&b);
    buf_free(&text);
    g4_json_free(d);
    return rc;
}

/* ==== Generation ==== */

static const char *fin_name(int fin, int tool_calls) {
    if (tool_calls) return "tool_calls";
    return fin == FIN_LENGTH ? "length" : "stop";
}

typedef struct gen_ctx {
    conn       *c;
    int         chat;
    gen_params  p;
    job        *j;
    char        id[40];
    long long   created;
    reply       rp;        /* chat: reasoning / content / tool calls split of the text */
    size_t      text_seen, ev_seen;
    int         sent_role;
} gen_ctx;

static void put_token_lp(gen_ctx *g, buf *b, const tok_ev *e) {
    g4_model *m = g->c->sv->m;
    char pc[1100];
    size_t pn = 0;
    if (g4_token_to_piece(m, e->id, 0, pc, sizeof pc, &pn) != G4_OK) pn = 0;
    buf_puts(b, "{\"token\":");
    buf_json_str(b, pc, pn);
    buf_puts(b, ",\"logprob\":");
    buf_json_num(b, e->logprob);
    buf_puts(b, ",\"bytes\":[");
    for (size_t i = 0; i < pn; i++) buf_printf(b, "%s%u", i ? "," : "", (unsigned)(unsigned char)pc[i]);
    buf_puts(b, "],\"top_logprobs\":[");
    for (int q = 0; q < e->n_top; q++) {
        size_t tn = 0;
        if (g4_token_to_piece(m, e->top_id[q], 0, pc, sizeof pc, &tn) != G4_OK) tn = 0;
        buf_printf(b, "%s{\"token\":", q ? "," : "");
        buf_json_str(b, pc, tn);
        buf_puts(b, ",\"logprob\":");
        buf_json_num(b, e->top_lp[q]);
        buf_puts(b, ",\"bytes\":[");
        for (size_t i = 0; i < tn; i++) buf_printf(b, "%s%u", i ? "," : "", (unsigned)(unsigned char)pc[i]);
        buf_puts(b, "]}");
    }
    buf_puts(b, "]}");
}

/* legacy completions logprobs object for events [e0, e1) */
static void put_completion_lp(gen_ctx *g, buf *b, const tok_ev *ev, size_t e0, size_t e1) {
    g4_model *m = g->c->sv->m;
    char pc[1100];
    size_t pn;
    buf_puts(b, "{\"tokens\":[");
    for (size_t i = e0; i < e1; i++) {
        pn = 0;
        if (g4_token_to_piece(m, ev[i].id, 0, pc, sizeof pc, &pn) != G4_OK) pn = 0;
        if (i > e0) buf_puts(b, ",");
        buf_json_str(b, pc, pn);
    }
    buf_puts(b, "],\"token_logprobs\":[");
    for (size_t i = e0; i < e1; i++) { if (i > e0) buf_puts(b, ","); buf_json_num(b, ev[i].logprob); }
    buf_puts(b, "],\"top_logprobs\":[");
    for (size_t i = e0; i < e1; i++) {
        buf_puts(b, i > e0 ? ",{" : "{");
        for (int q = 0; q < ev[i].n_top; q++) {
            pn = 0;
            if (g4_token_to_piece(m, ev[i].top_id[q], 0, pc, sizeof pc, &pn) != G4_OK) pn = 0;
            if (q) buf_puts(b, ",");
            buf_json_str(b, pc, pn);
            buf_puts(b, ":");
            buf_json_num(b, ev[i].top_lp[q]);
        }
        buf_puts(b, "}");
    }
    buf_puts(b, "],\"text_offset\":[");
    for (size_t i = e0; i < e1; i++) buf_printf(b, "%s%u", i > e0 ? "," : "", (unsigned)ev[i].text0);
    buf_puts(b, "]}");
}

static void put_usage(gen_ctx *g, buf *b) {
    job *j = g->j;
    buf_printf(b, "\"usage\":{\"prompt_tokens\":%zu,\"completion_tokens\":%d,\"total_tokens\":%zu,"
                  "\"prompt_tokens_details\":{\"cached_tokens\":%d}}", j->n_prompt, (int)j->n_gen,
               j->n_prompt + (size_t)j->n_gen, (int)j->n_cached);
}

/* "timings" as llama-server reports them (prompt and decode speed of this request) */
static void put_timings(gen_ctx *g, buf *b) {
    job *j = g->j;
    double pt = j->t_first > j->t_start ? j->t_first - j->t_start : 0, dt = j->t_end > j->t_first ? j->t_end - j->t_first : 0;
    size_t np = j->n_prompt - (size_t)j->n_cached;
    buf_printf(b, ",\"timings\":{\"prompt_n\":%zu,\"prompt_ms\":%.3f,\"prompt_per_second\":%.3f,\"predicted_n\":%d,"
                  "\"predicted_ms\":%.3f,\"predicted_per_second\":%.3f,\"cache_n\":%d,\"queue_ms\":%.3f",
               np, pt * 1e3, pt > 0 ? (double)np / pt : 0.0, (int)j->n_gen, dt * 1e3,
               dt > 0 && j->n_gen > 1 ? (double)(j->n_gen - 1) / dt : 0.0, (int)j->n_cached,
               (j->t_start > j->t_submit ? j->t_start - j->t_submit : 0) * 1e3);
    if (g->c->sv->spec) /* llama-server's names (it leaves them out when nothing was drafted) */
        buf_printf(b, ",\"draft_n\":%d,\"draft_n_accepted\":%d", (int)j->n_drafted, (int)j->n_accepted);
    buf_puts(b, "}");
}

/* one streamed chunk: the deltas of the reply since the last one */
static int stream_chunk(gen_ctx *g, const char *text, size_t n, const tok_ev *ev, size_t e0, size_t e1, int fin) {
    buf b = {0};
    buf_puts(&b, "{\"id\":");
    buf_puts(&b, g->id);
    buf_printf(&b, ",\"object\":\"%s\",\"created\":%lld,\"model\":", g->chat ? "chat.completion.chunk" : "text_completion", g->created);
    buf_json_str(&b, g->c->sv->model_name, strlen(g->c->sv->model_name));
    buf_printf(&b, ",\"system_fingerprint\":\"g4-%s\",\"choices\":[{\"index\":0,", g4_version());
    if (g->chat) {
        buf_puts(&b, "\"delta\":{");
        int any = 0;
        if (!g->sent_role) { buf_puts(&b, "\"role\":\"assistant\""); any = 1; g->sent_role = 1; }
        reply_delta rd;
        reply_push(&g->rp, text, n, fin != 0, &rd);
        if (rd.content_len || (!any && !rd.reasoning_len && !rd.n_calls && !fin)) {
            buf_printf(&b, "%s\"content\":", any ? "," : "");
            buf_json_str(&b, rd.content, rd.content_len);
            any = 1;
        }
        if (rd.reasoning_len) {
            buf_printf(&b, "%s\"reasoning_content\":", any ? "," : "");
            buf_json_str(&b, rd.reasoning, rd.reasoning_len);
            any = 1;
        }
        if (rd.n_calls) {
            buf_printf(&b, "%s\"tool_calls\":[", any ? "," : "");
            for (int k = 0; k < rd.n_calls; k++) {
                if (k) buf_puts(&b, ",");
                buf_printf(&b, "{\"index\":%d,\"id\":", rd.first_call + k);
                buf_json_str(&b, rd.calls[k].id, strlen(rd.calls[k].id));
                buf_puts(&b, ",\"type\":\"function\",\"function\":{\"name\":");
                buf_json_str(&b, rd.calls[k].name, rd.calls[k].name_len);
                buf_puts(&b, ",\"arguments\":");
                buf_json_str(&b, rd.calls[k].args, rd.calls[k].args_len);
                buf_puts(&b, "}}");
            }
            buf_puts(&b, "]");
        }
        buf_puts(&b, "}");
        if (e1 > e0 && g->p.top_logprobs >= 0) {
            buf_puts(&b, ",\"logprobs\":{\"content\":[");
            for (size_t i = e0; i < e1; i++) { if (i > e0) buf_puts(&b, ","); put_token_lp(g, &b, &ev[i]); }
            buf_puts(&b, "]}");
        } else {
            buf_puts(&b, ",\"logprobs\":null");
        }
    } else {
        buf_puts(&b, "\"text\":");
        buf_json_str(&b, text, n);
        if (e1 > e0 && g->p.top_logprobs >= 0) { buf_puts(&b, ",\"logprobs\":"); put_completion_lp(g, &b, ev, e0, e1); }
        else buf_puts(&b, ",\"logprobs\":null");
    }
    if (fin) buf_printf(&b, ",\"finish_reason\":\"%s\"}]", fin_name(fin, g->chat && g->rp.n_calls > 0));
    else buf_puts(&b, ",\"finish_reason\":null}]");
    if (fin && g->p.include_usage == 0) { buf_puts(&b, ","); put_usage(g, &b); put_timings(g, &b); } /* llama-server adds usage to the last chunk */
    buf_puts(&b, "}");
    int rc = b.oom ? -1 : sse_data(g->c, b.p, b.len);
    buf_free(&b);
    return rc;
}

static int final_usage_chunk(gen_ctx *g) {
    buf b = {0};
    buf_puts(&b, "{\"id\":");
    buf_puts(&b, g->id);
    buf_printf(&b, ",\"object\":\"%s\",\"created\":%lld,\"model\":", g->chat ? "chat.completion.chunk" : "text_completion", g->created);
    buf_json_str(&b, g->c->sv->model_name, strlen(g->c->sv->model_name));
    buf_puts(&b, ",\"choices\":[],");
    put_usage(g, &b);
    put_timings(g, &b);
    buf_puts(&b, "}");
    int rc = b.oom ? -1 : sse_data(g->c, b.p, b.len);
    buf_free(&b);
    return rc;
}

/* waits until the job has news (or 100 ms); 1 when the client went away */
static int wait_news(gen_ctx *g) {
    job *j = g->j;
    pthread_mutex_lock(&j->mu);
    if (!j->finish && j->text_len == g->text_seen && j->n_ev == g->ev_seen) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
        pthread_cond_timedwait(&j->cv, &j->mu, &ts);
    }
    pthread_mutex_unlock(&j->mu);
    return http_peer_gone(g->c->fd);
}

static void cancel(gen_ctx *g) {
    atomic_store(&g->j->cancel, 1);
    atomic_fetch_add(&g->c->sv->req_cancelled, 1);
    g->c->close_after = 1;
}

static int run_stream(gen_ctx *g) {
    if (sse_begin(g->c) < 0) { cancel(g); return -1; }
    job *j = g->j;
    for (;;) {
        int gone = wait_news(g);
        if (gone) { cancel(g); return -1; }
        pthread_mutex_lock(&j->mu);
        int fin = j->finish;
        size_t tl = j->text_len, nev = j->n_ev;
        char *text = NULL;
        tok_ev *ev = NULL;
        if (tl > g->text_seen) { text = malloc(tl - g->text_seen); if (text) memcpy(text, j->text + g->text_seen, tl - g->text_seen); }
        if (nev > g->ev_seen) { ev = malloc((nev - g->ev_seen) * sizeof *ev); if (ev) memcpy(ev, j->ev + g->ev_seen, (nev - g->ev_seen) * sizeof *ev); }
        pthread_mutex_unlock(&j->mu);
        if (fin == FIN_ERROR || fin == FIN_CANCEL) { free(text); free(ev); break; }
        int rc = 0;
        if (tl > g->text_seen || fin || !g->sent_role || (g->p.top_logprobs >= 0 && nev > g->ev_seen)) {
            rc = stream_chunk(g, text ? text : "", text ? tl - g->text_seen : 0, ev ? ev - g->ev_seen : NULL, g->ev_seen,
                              ev ? nev : g->ev_seen, fin);
        }
        free(text);
        free(ev);
        g->text_seen = tl;
        g->ev_seen = nev;
        if (rc < 0) { cancel(g); return -1; }
        if (fin) break;
    }
    if (j->finish == FIN_ERROR) { /* an error after the head: an error event, then the end */
        buf b = {0};
        buf_puts(&b, "{\"error\":{\"message\":");
        buf_json_str(&b, j->errmsg, strlen(j->errmsg));
        buf_puts(&b, ",\"type\":\"server_error\",\"param\":null,\"code\":null}}");
        sse_data(g->c, b.p ? b.p : "{}", b.len);
        buf_free(&b);
    } else if (g->p.include_usage) {
        if (final_usage_chunk(g) < 0) return -1;
    }
    if (sse_data(g->c, "[DONE]", 6) < 0 || sse_end(g->c) < 0) return -1;
    return 0;
}

static int run_once(gen_ctx *g) {
    job *j = g->j;
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int fin = j->finish;
        pthread_mutex_unlock(&j->mu);
        if (fin) break;
        if (wait_news(g)) { cancel(g); return -1; }
        g->text_seen = j->text_len; /* read without the lock: only to decide whether to wait */
        g->ev_seen = j->n_ev;
    }
    if (j->finish == FIN_ERROR) return respond_error(g->c, 500, NULL, NULL, "%s", j->errmsg);
    if (j->finish == FIN_CANCEL) return -1;
    buf b = {0};
    buf_puts(&b, "{\"id\":");
    buf_puts(&b, g->id);
    buf_printf(&b, ",\"object\":\"%s\",\"created\":%lld,\"model\":", g->chat ? "chat.completion" : "text_completion", g->created);
    buf_json_str(&b, g->c->sv->model_name, strlen(g->c->sv->model_name));
    buf_printf(&b, ",\"system_fingerprint\":\"g4-%s\",\"choices\":[{\"index\":0,", g4_version());
    if (g->chat) {
        reply_delta rd;
        reply_push(&g->rp, j->text ? j->text : "", j->text_len, 1, &rd);
        buf_puts(&b, "\"message\":{\"role\":\"assistant\",\"content\":");
        if (g->rp.content.len || !g->rp.n_calls) buf_json_str(&b, g->rp.content.p ? g->rp.content.p : "", g->rp.content.len);
        else buf_puts(&b, "null");
        if (g->rp.reasoning.len) { buf_puts(&b, ",\"reasoning_content\":"); buf_json_str(&b, g->rp.reasoning.p, g->rp.reasoning.len); }
        if (g->rp.n_calls) {
            buf_puts(&b, ",\"tool_calls\":[");
            for (int k = 0; k < g->rp.n_calls; k++) {
                const reply_call *rc = &g->rp.calls[k];
                buf_puts(&b, k ? ",{\"id\":" : "{\"id\":");
                buf_json_str(&b, rc->id, strlen(rc->id));
                buf_puts(&b, ",\"type\":\"function\",\"function\":{\"name\":");
                buf_json_str(&b, rc->name, rc->name_len);
                buf_puts(&b, ",\"arguments\":");
                buf_json_str(&b, rc->args, rc->args_len);
                buf_puts(&b, "}}");
            }
            buf_puts(&b, "]");
        }
        buf_puts(&b, "}");
        if (g->p.top_logprobs >= 0) {
            buf_puts(&b, ",\"logprobs\":{\"content\":[");
            for (size_t i = 0; i < j->n_ev; i++) { if (i) buf_puts(&b, ","); put_token_lp(g, &b, &j->ev[i]); }
            buf_puts(&b, "]}");
        } else {
            buf_puts(&b, ",\"logprobs\":null");
        }
    } else {
        buf_puts(&b, "\"text\":");
        buf_json_str(&b, j->text ? j->text : "", j->text_len);
        if (g->p.top_logprobs >= 0) { buf_puts(&b, ",\"logprobs\":"); put_completion_lp(g, &b, j->ev, 0, j->n_ev); }
        else buf_puts(&b, ",\"logprobs\":null");
    }
    buf_printf(&b, ",\"finish_reason\":\"%s\"}],", fin_name(j->finish, g->chat && g->rp.n_calls > 0));
    put_usage(g, &b);
    put_timings(g, &b);
    buf_puts(&b, "}");
    int rc = send_buf(g->c, 200, &b);
    buf_free(&b);
    return rc;
}

static int post_generate(conn *c, const http_req *r, int chat) {
    srv *sv = c->sv;
    g4_json *d = NULL;
    if (parse_body(c, r, &d) < 0) return 0;
    const g4_jv *root = g4_json_root(d);
    gen_ctx *g = calloc(1, sizeof *g);
    int rc = 0;
    perr e;
    memset(&e, 0, sizeof e);
    if (!g) { g4_json_free(d); return respond_error(c, 503, NULL, NULL, "out of memory"); }
    g->c = c;
    g->chat = chat;
    g->created = (long long)time(NULL);
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (params_parse(sv, root, chat, &g->p, &e) < 0 ||
        (chat ? chat_prompt(sv, root, &g->p, &ids, &n_ids, &e) : completion_prompt(sv, root, &ids, &n_ids, &e)) < 0) {
        rc = respond_error(c, e.status ? e.status : 400, e.param[0] ? e.param : NULL, e.code, "%s", e.msg);
        goto done;
    }
    if (n_ids == 0) { rc = respond_error(c, 400, chat ? "messages" : "prompt", "invalid_value", "the prompt is empty"); goto done; }
    if (n_ids >= (size_t)sv->n_ctx_slot) {
        rc = respond_error(c, 400, chat ? "messages" : "prompt", "context_length_exceeded",
                           "the prompt has %zu tokens; the context of a slot is %d tokens", n_ids, (int)sv->n_ctx_slot);
        goto done;
    }
    if (chat && reply_init(&g->rp, g->p.tool_calls) < 0) { rc = respond_error(c, 503, NULL, NULL, "out of memory"); goto done; }
    g->j = job_new();
    if (!g->j) { rc = respond_error(c, 503, NULL, NULL, "out of memory"); goto done; }
    job *j = g->j;
    j->prompt = ids;
    ids = NULL;
    j->n_prompt = n_ids;
    j->n_predict = g->p.max_tokens;
    j->ignore_eos = g->p.ignore_eos;
    j->top_logprobs = g->p.top_logprobs;
    j->n_stop = g->p.n_stop;
    memcpy(j->stop, g->p.stop, sizeof j->stop);
    memcpy(j->stop_len, g->p.stop_len, sizeof j->stop_len);
    char err[256];
    if (g4_sampler_create(&j->smp, sv->m, &g->p.sp, err, sizeof err) != G4_OK) { rc = respond_error(c, 400, NULL, "invalid_value", "%s", err); goto done; }
    {
        buf idb = {0};
        put_id(&idb, sv, chat ? "chatcmpl-" : "cmpl-");
        snprintf(g->id, sizeof g->id, "%s", idb.p ? idb.p : "\"x\"");
        buf_free(&idb);
    }
    int sr = sched_submit(sv->sc, j);
    if (sr == -1) { rc = respond_error(c, 503, NULL, "server_busy", "all %d slots are busy and the queue is full; retry later", sv->n_slots); goto done; }
    if (sr == -2) { c->close_after = 1; rc = respond_error(c, 503, NULL, "shutting_down", "the server is shutting down"); goto done; }
    if (g->p.stream) atomic_fetch_add(&sv->req_stream, 1);
    rc = g->p.stream ? run_stream(g) : run_once(g);
done:
    if (g->j) job_release(g->j);
    reply_free(&g->rp);
    free(ids);
    free(g);
    g4_json_free(d);
    return rc;
}

/* ==== Dispatch ==== */

int route(conn *c, const http_req *r) {
    srv *sv = c->sv;
    static const struct { const char *path; const char *method; int auth; int id; } R[] = {
        {"/", "GET", 0, 1}, {"/health", "GET", 0, 2}, {"/v1/health", "GET", 0, 2}, {"/metrics", "GET", 1, 3},
        {"/v1/models", "GET", 1, 4}, {"/models", "GET", 1, 4}, {"/v1/chat/completions", "POST", 1, 5},
        {"/chat/completions", "POST", 1, 5}, {"/v1/completions", "POST", 1, 6}, {"/completions", "POST", 1, 6},
        {"/tokenize", "POST", 1, 7}, {"/detokenize", "POST", 1, 8},
    };
    for (size_t i = 0; i < sizeof R / sizeof R[0]; i++) {
        if (!path_is(r, R[i].path)) continue;
        int head = strcmp(r->method, "HEAD") == 0 && strcmp(R[i].method, "GET") == 0;
        if (strcmp(r->method, R[i].method) != 0 && !head) {
            char allow[64];
            snprintf(allow, sizeof allow, "Allow: %s\r\n", R[i].method);
            buf b = {0};
            buf_printf(&b, "{\"error\":{\"message\":\"method %s is not allowed on %s (use %s)\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"method_not_allowed\"}}",
                       r->method, R[i].path, R[i].method);
            int rc = respond(c, 405, "application/json", b.p, b.len, allow);
            buf_free(&b);
            return rc;
        }
        if (R[i].auth && !auth_ok(sv, r)) return respond_error(c, 401, NULL, "invalid_api_key", "invalid or missing API key (Authorization: Bearer ...)");
        switch (R[i].id) {
        case 1: return respond(c, 200, "text/html; charset=utf-8", (const char *)serve_page, head ? 0 : serve_page_len, NULL);
        case 2: return get_health(c);
        case 3: return get_metrics(c);
        case 4: return get_models(c);
        case 5: return post_generate(c, r, 1);
        case 6: return post_generate(c, r, 0);
        case 7: return post_tokenize(c, r);
        case 8: return post_detokenize(c, r);
        }
    }
    char t[80];
    size_t n = r->target_len < 60 ? r->target_len : 60, k = 0;
    for (size_t i = 0; i < n; i++) t[k++] = r->target[i] == '"' || r->target[i] == '\\' ? '?' : r->target[i];
    t[k] = 0;
    return respond_error(c, 404, NULL, "not_found", "no route for %s %s%s", r->method, t, r->target_len > 60 ? "..." : "");
}
