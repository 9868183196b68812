/* metrics.c - GET /metrics in the Prometheus text format (version 0.0.4): requests by status
 * class, tokens, prompt and decode rates (over the last minute, and since start), queue
 * depth, busy slots, aborted steps, checkpoints, connections. */
#include "srv.h"

static void metric(buf *b, const char *name, const char *type, const char *help, double v) {
    buf_printf(b, "# HELP g4_%s %s\n# TYPE g4_%s %s\ng4_%s %.17g\n", name, help, name, type, name, v);
}

void metrics_text(srv *sv, buf *b) {
    sched_stats st;
    sched_get_stats(sv->sc, &st);
    buf_printf(b, "# HELP g4_requests_total HTTP requests answered, by status class.\n# TYPE g4_requests_total counter\n");
    buf_printf(b, "g4_requests_total{code=\"2xx\"} %llu\n", (unsigned long long)atomic_load(&sv->req_2xx));
    buf_printf(b, "g4_requests_total{code=\"4xx\"} %llu\n", (unsigned long long)atomic_load(&sv->req_4xx));
    buf_printf(b, "g4_requests_total{code=\"5xx\"} %llu\n", (unsigned long long)atomic_load(&sv->req_5xx));
    metric(b, "requests_streamed_total", "counter", "Generation requests answered as server-sent events.", (double)atomic_load(&sv->req_stream));
    metric(b, "requests_cancelled_total", "counter", "Generations cancelled because the client went away.", (double)atomic_load(&sv->req_cancelled));
    metric(b, "generations_total", "counter", "Generations that ended (any reason).", (double)st.requests_done);
    metric(b, "prompt_tokens_total", "counter", "Prompt tokens evaluated.", (double)st.prompt_tokens);
    metric(b, "prompt_tokens_cached_total", "counter", "Prompt tokens reused from a slot's cache.", (double)st.cached_tokens);
    metric(b, "tokens_predicted_total", "counter", "Tokens generated.", (double)st.gen_tokens);
    metric(b, "prompt_seconds_total", "counter", "Seconds spent in steps that evaluated prompt tokens.", st.prompt_s);
    metric(b, "decode_seconds_total", "counter", "Seconds spent in decode-only steps.", st.decode_s);
    const rates_sum *w = &st.recent;
    metric(b, "prompt_tokens_per_second", "gauge", "Prompt tokens per second of the steps that evaluated prompt tokens, last minute.",
           w->prompt_s > 0 ? (double)w->prompt_tok / w->prompt_s : 0.0);
    metric(b, "decode_tokens_per_second", "gauge", "Tokens generated per second of decode-only steps, last minute.",
           w->decode_s > 0 ? (double)w->gen_tok / w->decode_s : 0.0);
    metric(b, "generated_tokens_per_second", "gauge", "Tokens generated per second of wall time (all slots), last minute.",
           w->window_s > 0 ? (double)w->gen_tok / w->window_s : 0.0);
    metric(b, "requests_per_second", "gauge", "Generations ended per second, last minute.", w->window_s > 0 ? (double)w->requests / w->window_s : 0.0);
    double busy = w->window_s > 0 ? (w->prompt_s + w->decode_s) / w->window_s : 0.0; /* a step is counted where it ends */
    metric(b, "busy_fraction", "gauge", "Share of the last minute spent in evaluation steps.", busy < 1 ? busy : 1.0);
    metric(b, "prompt_tokens_per_second_since_start", "gauge", "Prompt tokens per second of prompt steps, since start.", st.prompt_s > 0 ? (double)st.prompt_tokens / st.prompt_s : 0.0);
    metric(b, "decode_tokens_per_second_since_start", "gauge", "Generated tokens per second of decode steps, since start.", st.decode_s > 0 ? (double)st.gen_tokens / st.decode_s : 0.0);
    metric(b, "steps_aborted_total", "counter", "Steps stopped between forward chunks because a client went away.", (double)st.aborted_steps);
    metric(b, "checkpoints_saved_total", "counter", "Context checkpoints written after long prompts.", (double)st.ckpt_saves);
    metric(b, "checkpoints_used_total", "counter", "Prompts that started from a context checkpoint.", (double)st.ckpt_loads);
    metric(b, "draft_tokens_total", "counter", "Speculative decoding: drafted tokens verified.", (double)st.draft_tokens);
    metric(b, "draft_tokens_accepted_total", "counter", "Speculative decoding: drafted tokens accepted.", (double)st.draft_accepted);
    metric(b, "steps_total", "counter", "Batched evaluation steps.", (double)st.steps);
    metric(b, "queue_depth", "gauge", "Requests waiting for a slot.", (double)st.queued);
    metric(b, "slots_busy", "gauge", "Slots generating.", (double)st.busy);
    metric(b, "slots_total", "gauge", "Slots (-np).", (double)st.slots);
    metric(b, "connections_open", "gauge", "Open HTTP connections.", (double)atomic_load(&sv->conns_open));
    metric(b, "connections_total", "counter", "HTTP connections accepted.", (double)atomic_load(&sv->conns_total));
}
