/* serve.c - g4 serve: an OpenAI-compatible HTTP server over one model.
 *
 *   g4 serve -m MODEL [--host 127.0.0.1] [--port 8080] [-np N] [-c N] [-t N] [--api-key-file F]
 *
 * Owns: arguments, the listening socket, one thread per connection (bounded), timeouts,
 * signals. SIGINT/SIGTERM stop accepting, let running requests finish for up to --grace
 * seconds (then cut them, each stream still ending with its final chunk and [DONE]), and
 * exit 0. Does not own: the endpoints (routes.c) and the scheduler (slots.c).
 *
 * Timeouts (--timeout S, default 10): a request head must arrive within S seconds of its
 * first byte and a body must keep coming (no S-second pause), else 408; an idle keep-alive
 * connection is closed after S seconds; a client that stops reading a response for S
 * seconds is dropped (its job cancelled).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../cli/cli.h" /* the speculative-decoding flags g4 run takes (cli/spec.c, g4.h only) */
#include "ckpt.h"
#include "srv.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: g4 serve -m MODEL [options]\n"
            "  -m, --model FILE       GGUF model\n"
            "  --host ADDR            address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)\n"
            "  --port N               port (default 8080; 0 = any free port, printed on stderr)\n"
            "  -np, --parallel N      slots: requests generated together (default 1)\n"
            "  -c, --ctx-size N       total context, split evenly between the slots (default 4096 per slot)\n"
            "  -t, --threads N        threads (default: online CPUs)\n"
            "  --no-repack            keep weights as stored, read in place (no repack or copy at open; llama.cpp's -nr)\n"
            "  -a, --alias NAME       model name reported by /v1/models (default: the file name)\n"
            "  --api-key-file F       require 'Authorization: Bearer KEY' with the key in F (first line);\n"
            "                         G4_API_KEY in the environment does the same (never a flag value)\n"
            "  --queue N              requests waiting beyond the slots before 503 (default 16)\n"
            "  --max-body N           largest request body in bytes (default 8388608)\n"
            "  --max-conns N          open connections (default 64)\n"
            "  --timeout S            slow-client timeout in seconds (default 10)\n"
            "  --grace S              on SIGINT/SIGTERM, let running requests finish this long (default 5)\n"
            "  -ub, --ubatch N        prompt chunk per slot and step (default 128)\n"
            "  --ctx-checkpoints N    1 (default): a slot saves its state after a long prompt, in a private\n"
            "                         directory under $TMPDIR, so a resent conversation reuses it after a long\n"
            "                         answer; 0: never\n"
            "  -v, --verbose          one line per request on stderr\n"
            "  -h, --help             this text\n"
            "speculative decoding (every decoding slot drafts; one batched pass verifies every draft):\n%s",
            cli_spec_usage());
}

/* ==== Signals: a self-pipe the accept loop polls ==== */

static int g_sig_pipe[2] = {-1, -1}; /* the one piece of process state: a signal handler needs it */
static void on_signal(int sig) {
    (void)sig;
    int e = errno;
    if (g_sig_pipe[1] >= 0) { ssize_t w = write(g_sig_pipe[1], "x", 1); (void)w; }
    errno = e;
}

/* ==== Connections ==== */

typedef struct conn_arg { srv *sv; int fd; int verbose; } conn_arg;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void count_status(srv *sv, int status) {
    atomic_fetch_add(&sv->req_total, 1);
    if (status < 300) atomic_fetch_add(&sv->req_2xx, 1);
    else if (status < 500) atomic_fetch_add(&sv->req_4xx, 1);
    else atomic_fetch_add(&sv->req_5xx, 1);
}

static void *conn_main(void *arg) {
    conn_arg *ca = arg;
    srv *sv = ca->sv;
    conn c;
    memset(&c, 0, sizeof c);
    c.sv = sv;
    c.fd = ca->fd;
    int verbose = ca->verbose;
    free(ca);
    http_parser_init(&c.hp, sv->max_body);
    char rb[16384];
    double t_req = 0; /* first byte of the current request, 0 = idle */
    double t_last = now_s();
    for (;;) {
        int rc = http_step(&c.hp);
        if (rc == HTTP_HEAD) {
            if (c.hp.req.expect_continue && http_send_all(c.fd, "HTTP/1.1 100 Continue\r\n\r\n", 25, sv->timeout_s * 1000) < 0) break;
            continue;
        }
        if (rc == HTTP_DONE) {
            c.close_after = !c.hp.req.keep_alive || atomic_load(&sv->stopping);
            double t0 = now_s();
            int r = route(&c, &c.hp.req);
            count_status(sv, c.status);
            if (verbose)
                fprintf(stderr, "g4 serve: %s %.*s -> %d (%.1f ms)\n", c.hp.req.method, (int)(c.hp.req.target_len > 80 ? 80 : c.hp.req.target_len),
                        c.hp.req.target, c.status, (now_s() - t0) * 1e3);
            if (r < 0 || c.close_after) break;
            http_next(&c.hp);
            t_req = c.hp.len ? now_s() : 0;
            t_last = now_s();
            continue;
        }
        if (rc == HTTP_ERROR) {
            c.close_after = 1;
            respond_error(&c, c.hp.status, NULL, NULL, "%s", c.hp.msg);
            count_status(sv, c.hp.status);
            break;
        }
        /* HTTP_NEED: read more, within the deadlines */
        double now = now_s(), limit;
        if (t_req == 0) limit = t_last + sv->timeout_s;                      /* idle keep-alive */
        else if (c.hp.head_len == 0) limit = t_req + sv->timeout_s;          /* the head, from its first byte */
        else limit = t_last + sv->timeout_s;                                 /* the body must keep coming */
        int wait_ms = (int)((limit - now) * 1000);
        if (atomic_load(&sv->stopping) && t_req == 0) break;
        if (wait_ms > 250) wait_ms = 250; /* wake up to notice a shutdown */
        if (wait_ms < 0) wait_ms = 0;
        struct pollfd pf = {c.fd, POLLIN, 0};
        int pr = poll(&pf, 1, wait_ms);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) {
            if (now_s() < limit) continue;
            if (t_req != 0) { /* slow client: 408 */
                c.close_after = 1;
                respond_error(&c, 408, NULL, "timeout", "the request did not arrive within %d s", sv->timeout_s);
                count_status(sv, 408);
            }
            break;
        }
        ssize_t k = recv(c.fd, rb, sizeof rb, 0);
        if (k == 0) break;
        if (k < 0) { if (errno == EINTR || errno == EAGAIN) continue; break; }
        if (t_req == 0) t_req = now_s();
        t_last = now_s();
        if (http_feed(&c.hp, rb, (size_t)k) < 0) {
            c.close_after = 1;
            respond_error(&c, c.hp.status, NULL, NULL, "%s", c.hp.msg);
            count_status(sv, c.hp.status);
            break;
        }
    }
    http_parser_free(&c.hp);
    shutdown(c.fd, SHUT_WR);
    close(c.fd);
    atomic_fetch_sub(&sv->conns_open, 1);
    return NULL;
}

/* ==== Listening ==== */

static int listen_on(const char *host, int port, char *desc, size_t dlen) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int gr = getaddrinfo(host, ps, &hints, &res);
    if (gr != 0) { snprintf(desc, dlen, "%s: %s", host, gai_strerror(gr)); return -1; }
    int fd = -1;
    char why[128] = "no address";
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) { snprintf(why, sizeof why, "%s", strerror(errno)); continue; }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) {
            struct sockaddr_storage ss;
            socklen_t sl = sizeof ss;
            int p = port;
            if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
                p = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) : ntohs(((struct sockaddr_in *)&ss)->sin_port);
            snprintf(desc, dlen, "http://%s%s%s:%d", a->ai_family == AF_INET6 ? "[" : "", host, a->ai_family == AF_INET6 ? "]" : "", p);
            freeaddrinfo(res);
            return fd;
        }
        snprintf(why, sizeof why, "%s", strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    snprintf(desc, dlen, "cannot listen on %s:%d: %s", host, port, why);
    return -1;
}

static int read_key(const char *path, srv *sv) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "g4 serve: %s: %s\n", path, strerror(errno)); return -1; }
    char line[sizeof sv->api_key];
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = 0;
    n = strcspn(line, "\r\n");
    line[n] = 0;
    if (n == 0) { fprintf(stderr, "g4 serve: %s: the key is empty\n", path); return -1; }
    memcpy(sv->api_key, line, n + 1);
    sv->api_key_len = n;
    return 0;
}

static int cli_long(const char *flag, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "g4 serve: %s expects an integer from %ld to %ld, got '%s'\n", flag, lo, hi, s ? s : "");
        return 0;
    }
    *out = v;
    return 1;
}

int cmd_serve(int argc, char **argv) {
    const char *model = NULL, *host = "127.0.0.1", *key_file = NULL, *alias = NULL;
    long port = 8080, np = 1, ctx = 0, threads = 0, queue = 16, max_body = 8 << 20, max_conns = 64, timeout = 10, grace = 5, ubatch = 128,
         ckpts = 1;
    int verbose = 0, no_repack = 0;
    cli_spec cs;
    memset(&cs, 0, sizeof cs);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const int sr = cli_spec_arg(&cs, "serve", argc, argv, &i);
        if (sr < 0) return 2;
        if (sr > 0) continue;
#define NEED() do { if (!v) { fprintf(stderr, "g4 serve: %s needs a value\n", a); return 2; } i++; } while (0)
#define NUM(var, lo, hi) do { NEED(); if (!cli_long(a, v, lo, hi, &var)) return 2; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { NEED(); model = v; }
        else if (!strcmp(a, "--host")) { NEED(); host = v; }
        else if (!strcmp(a, "-a") || !strcmp(a, "--alias")) { NEED(); alias = v; }
        else if (!strcmp(a, "--api-key-file")) { NEED(); key_file = v; }
        else if (!strcmp(a, "--api-key")) { fprintf(stderr, "g4 serve: --api-key would show the key in ps; use --api-key-file or G4_API_KEY\n"); return 2; }
        else if (!strcmp(a, "--port")) NUM(port, 0, 65535);
        else if (!strcmp(a, "-np") || !strcmp(a, "--parallel")) NUM(np, 1, 256);
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) NUM(ctx, 0, INT32_MAX);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) NUM(threads, 0, 512);
        else if (!strcmp(a, "--no-repack") || !strcmp(a, "-nr")) no_repack = 1;
        else if (!strcmp(a, "--queue")) NUM(queue, 0, 100000);
        else if (!strcmp(a, "--max-body")) NUM(max_body, 1024, 1L << 30);
        else if (!strcmp(a, "--max-conns")) NUM(max_conns, 1, 100000);
        else if (!strcmp(a, "--timeout")) NUM(timeout, 1, 3600);
        else if (!strcmp(a, "--grace")) NUM(grace, 0, 3600);
        else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch")) NUM(ubatch, 1, 8192);
        else if (!strcmp(a, "--ctx-checkpoints")) NUM(ckpts, 0, 1);
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) verbose = 1;
        else { fprintf(stderr, "g4 serve: unknown option '%s'\n(g4 serve --help for usage)\n", a); return 2; }
#undef NUM
#undef NEED
    }
    if (!model) { fprintf(stderr, "g4 serve: -m MODEL is required\n(g4 serve --help for usage)\n"); return 2; }
    if (!cli_spec_valid(&cs, "serve")) return 2;

    srv *sv = calloc(1, sizeof *sv);
    if (!sv) { fprintf(stderr, "g4 serve: out of memory\n"); return 1; }
    sv->max_body = (size_t)max_body;
    sv->timeout_s = (int)timeout;
    sv->n_slots = (int)np;
    sv->created = (int64_t)time(NULL);
    const char *env = getenv("G4_API_KEY");
    if (key_file) { if (read_key(key_file, sv) < 0) { free(sv); return 1; } }
    else if (env && *env) {
        size_t n = strlen(env);
        if (n >= sizeof sv->api_key) { fprintf(stderr, "g4 serve: G4_API_KEY is longer than %zu bytes\n", sizeof sv->api_key - 1); free(sv); return 1; }
        memcpy(sv->api_key, env, n + 1);
        sv->api_key_len = n;
    }
    const char *base = strrchr(model, '/');
    snprintf(sv->model_name, sizeof sv->model_name, "%s", alias ? alias : base ? base + 1 : model);

    char err[512];
    g4_model_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.n_threads = (int)threads;
    mo.no_repack = no_repack;
    if (g4_model_open(&sv->m, model, &mo, err, sizeof err) != G4_OK) { fprintf(stderr, "g4 serve: %s\n", err); free(sv); return 1; }
    g4_spec_opts spo;
    g4_assistant *asst = NULL;
    if (!cli_spec_setup(&cs, sv->m, "serve", 0, &spo, &asst)) { g4_model_close(sv->m); free(sv); return 1; }
    int32_t per = ctx ? (int32_t)(ctx / np) : 4096;
    if (per > g4_model_n_ctx_train(sv->m)) per = g4_model_n_ctx_train(sv->m);
    if (per < 16) {
        fprintf(stderr, "g4 serve: -c %ld gives %d tokens per slot (at least 16 needed)\n", ctx, (int)per);
        g4_assistant_close(asst);
        g4_model_close(sv->m);
        free(sv);
        return 2;
    }
    char ckdir[600] = "";
    if (ckpts && ckpt_dir_create(ckdir, sizeof ckdir, err, sizeof err) < 0) {
        fprintf(stderr, "g4 serve: %s (--ctx-checkpoints 0 turns checkpoints off)\n", err);
        g4_assistant_close(asst);
        g4_model_close(sv->m);
        free(sv);
        return 1;
    }
    sched_opts so;
    memset(&so, 0, sizeof so);
    so.n_slots = (int)np;
    so.n_ctx = per;
    so.max_queue = (int)queue;
    so.n_ubatch = (int32_t)ubatch;
    so.ckpt_dir = ckdir;
    so.spec = spo.type != G4_SPEC_NONE ? &spo : NULL;
    sv->spec = so.spec != NULL;
    if (sched_create(&sv->sc, sv->m, &so, err, sizeof err) != 0) {
        fprintf(stderr, "g4 serve: %s\n", err);
        ckpt_dir_remove(ckdir);
        g4_assistant_close(asst);
        g4_model_close(sv->m);
        free(sv);
        return 1;
    }
    sv->n_ctx_slot = sched_n_ctx(sv->sc);

    char desc[300];
    int lfd = listen_on(host, (int)port, desc, sizeof desc);
    if (lfd < 0) {
        fprintf(stderr, "g4 serve: %s\n", desc);
        sched_free(sv->sc);
        ckpt_dir_remove(ckdir);
        g4_assistant_close(asst);
        g4_model_close(sv->m);
        free(sv);
        return 1;
    }
    int rc = 0;
    if (pipe(g_sig_pipe) != 0) { fprintf(stderr, "g4 serve: pipe: %s\n", strerror(errno)); rc = 1; goto out; }
    fcntl(g_sig_pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(g_sig_pipe[1], F_SETFD, FD_CLOEXEC);
    fcntl(g_sig_pipe[1], F_SETFL, O_NONBLOCK);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    fprintf(stderr, "g4 serve: %s, %d slot%s of %d tokens, %d threads, kernels %s%s%s%s\n", sv->model_name, sv->n_slots,
            sv->n_slots > 1 ? "s" : "", (int)sv->n_ctx_slot, g4_model_n_threads(sv->m), g4_model_kernels(sv->m),
            sv->api_key_len ? ", API key required" : "", sv->spec ? ", speculative " : "",
            sv->spec ? g4_spec_type_name(spo.type) : "");
    fprintf(stderr, "g4 serve: listening on %s\n", desc);

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 512 * 1024);
    for (;;) {
        struct pollfd pf[2] = {{lfd, POLLIN, 0}, {g_sig_pipe[0], POLLIN, 0}};
        int pr = poll(pf, 2, -1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr < 0 || (pf[1].revents & POLLIN)) break;
        if (!(pf[0].revents & POLLIN)) continue;
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) { if (errno == EMFILE || errno == ENFILE) usleep(10000); continue; }
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        int fl = fcntl(fd, F_GETFL);
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        if (atomic_load(&sv->conns_open) >= max_conns) {
            static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                                       "Connection: close\r\nContent-Length: 123\r\n\r\n"
                                       "{\"error\":{\"message\":\"too many open connections\",\"type\":\"unavailable_error\",\"param\":null,\"code\":\"server_busy\"}}";
            http_send_all(fd, busy, sizeof busy - 1, 200);
            close(fd);
            atomic_fetch_add(&sv->req_total, 1);
            atomic_fetch_add(&sv->req_5xx, 1);
            continue;
        }
        conn_arg *ca = malloc(sizeof *ca);
        if (!ca) { close(fd); continue; }
        ca->sv = sv;
        ca->fd = fd;
        ca->verbose = verbose;
        atomic_fetch_add(&sv->conns_open, 1);
        atomic_fetch_add(&sv->conns_total, 1);
        pthread_t th;
        if (pthread_create(&th, &attr, conn_main, ca) != 0) {
            atomic_fetch_sub(&sv->conns_open, 1);
            close(fd);
            free(ca);
        }
    }
    pthread_attr_destroy(&attr);
    fprintf(stderr, "g4 serve: shutting down (%d connection%s open)\n", atomic_load(&sv->conns_open), atomic_load(&sv->conns_open) == 1 ? "" : "s");
out:
    close(lfd);
    atomic_store(&sv->stopping, 1);
    sched_drain(sv->sc, (double)grace);
    /* connections end once their responses are written (running jobs finish or are cut) */
    for (int k = 0; k < 200 * ((int)grace + 3) && atomic_load(&sv->conns_open) > 0; k++) usleep(5000);
    int left = atomic_load(&sv->conns_open);
    if (left == 0) {
        sched_free(sv->sc); /* removes the checkpoint files */
        ckpt_dir_remove(ckdir);
        g4_assistant_close(asst);
        g4_model_close(sv->m);
        free(sv);
    } else { /* a connection thread still holds the server: leave it to the process exit */
        fprintf(stderr, "g4 serve: %d connection%s did not close in time\n", left, left == 1 ? "" : "s");
        ckpt_dir_remove(ckdir);
    }
    if (g_sig_pipe[0] >= 0) { close(g_sig_pipe[0]); close(g_sig_pipe[1]); g_sig_pipe[0] = g_sig_pipe[1] = -1; }
    return rc;
}
