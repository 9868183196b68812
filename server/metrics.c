/* metrics.c - GET /metrics in the Prometheus text format (version 0.0.4): requests by status
 * class, tokens, prompt and decode rates, queue depth, busy slots, connections. */
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
    metric(b, "prompt_tokens_per_second", "gauge", "Prompt tokens per second of prompt steps, since start.", st.prompt_s > 0 ? (double)st.prompt_tokens / st.prompt_s : 0.0);
    metric(b, "decode_tokens_per_second", "gauge", "Generated tokens per second of decode steps, since start.", st.decode_s > 0 ? (double)st.gen_tokens / st.decode_s : 0.0);
    metric(b, "steps_total", "counter", "Batched evaluation steps.", (double)st.steps);
    metric(b, "queue_depth", "gauge", "Requests waiting for a slot.", (double)st.queued);
    metric(b, "slots_busy", "gauge", "Slots generating.", (double)st.busy);
    metric(b, "slots_total", "gauge", "Slots (-np).", (double)st.slots);
    metric(b, "connections_open", "gauge", "Open HTTP connections.", (double)atomic_load(&sv->conns_open));
    metric(b, "connections_total", "counter", "HTTP connections accepted.", (double)atomic_load(&sv->conns_total));
}
