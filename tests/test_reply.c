/* test_reply.c - g4_reply: a Gemma 4 answer split into content, reasoning and tool calls,
 * whole and fed one byte at a time (same result), tool-call arguments as JSON, and what
 * does not parse coming back as content. */
#include <stdlib.h>
#include <string.h>

#include "g4.h"
#include "t.h"

typedef struct acc { char content[4096], reasoning[4096], calls[4096]; size_t nc, nr, nk; } acc;

static int on(void *ud, int kind, const char *s, size_t n, const char *name, size_t nl) {
    acc *a = ud;
    if (kind == G4_REPLY_CONTENT && a->nc + n < sizeof a->content) { memcpy(a->content + a->nc, s, n); a->nc += n; }
    if (kind == G4_REPLY_REASONING && a->nr + n < sizeof a->reasoning) { memcpy(a->reasoning + a->nr, s, n); a->nr += n; }
    if (kind == G4_REPLY_TOOL_CALL && a->nk + n + nl + 2 < sizeof a->calls) {
        memcpy(a->calls + a->nk, name, nl); a->nk += nl;
        a->calls[a->nk++] = '=';
        memcpy(a->calls + a->nk, s, n); a->nk += n;
        a->calls[a->nk++] = ';';
    }
    return 0;
}

static acc split(const char *s, size_t step) {
    acc a;
    memset(&a, 0, sizeof a);
    g4_reply *r = NULL;
    if (g4_reply_create(&r) != G4_OK) return a;
    size_t n = strlen(s);
    if (!step) g4_reply_push(r, s, n, 1, on, &a);
    else {
        for (size_t i = 0; i < n; i += step) g4_reply_push(r, s + i, n - i < step ? n - i : step, 0, on, &a);
        g4_reply_push(r, NULL, 0, 1, on, &a);
    }
    g4_reply_free(r);
    return a;
}

static void check(const char *in, const char *content, const char *reasoning, const char *calls) {
    for (size_t step = 0; step <= 3; step++) {
        acc a = split(in, step);
        int ok = strcmp(a.content, content) == 0 && strcmp(a.reasoning, reasoning) == 0 && strcmp(a.calls, calls) == 0;
        T_CHECKF(ok, "'%s' step %zu:\n      content '%s' (want '%s')\n      reasoning '%s' (want '%s')\n      calls '%s' (want '%s')",
                 in, step, a.content, content, a.reasoning, reasoning, a.calls, calls);
    }
}

T_GROUP(reply) {
    check("Hello there.", "Hello there.", "", "");
    check("<|channel>thought\nLet me think.<channel|>The answer is 4.", "The answer is 4.", "Let me think.", "");
    check("<|channel>thought\nunfinished", "", "unfinished", "");
    check("a < b <| c", "a < b <| c", "", "");
    check("<|tool_call>call:get_weather{location:<|\"|>Paris, FR<|\"|>,days:3,metric:true}<tool_call|>", "", "",
          "get_weather={\"location\":\"Paris, FR\",\"days\":3,\"metric\":true};");
    check("<|channel>thought\nneed weather<channel|><|tool_call>call:f{a:{b:[1,<|\"|>x<|\"|>,null]},c:-2.5e3,d:word}<tool_call|>"
          "<|tool_call>call:g{}<tool_call|>",
          "", "need weather", "f={\"a\":{\"b\":[1,\"x\",null]},\"c\":-2.5e3,\"d\":\"word\"};g={};");
    /* quotes and backslashes inside strings become JSON escapes */
    check("<|tool_call>call:s{q:<|\"|>say \"hi\" \\ now\n<|\"|>}<tool_call|>", "", "", "s={\"q\":\"say \\\"hi\\\" \\\\ now\\n\"};");
    /* malformed calls come back as content, markers included */
    check("x<|tool_call>call:broken{a:<tool_call|>y", "x<|tool_call>call:broken{a:<tool_call|>y", "", "");
    check("<|tool_call>nocall<tool_call|>", "<|tool_call>nocall<tool_call|>", "", "");
    check("<|tool_call>call:open{a:1", "<|tool_call>call:open{a:1", "", "");
    /* nesting past the bound is refused, not recursed into */
    char deep[300] = "<|tool_call>call:d{a:";
    for (int i = 0; i < 40; i++) strcat(deep, "[");
    for (int i = 0; i < 40; i++) strcat(deep, "]");
    strcat(deep, "}<tool_call|>");
    acc a = split(deep, 0);
    T_CHECK(a.nk == 0 && strcmp(a.content, deep) == 0);
    /* arguments */
    T_CHECK(g4_reply_push(NULL, "x", 1, 0, on, &a) == G4_ERR_ARG && g4_reply_create(NULL) == G4_ERR_ARG);
}
