/* chat.h - Gemma 4 chat rendering internals (chat.c, chat_tools.c), shared with tests and the
 * CLI's chat. */
#ifndef G4_CHAT_H
#define G4_CHAT_H

#include "g4_impl.h"

/* How a template renders tools (read from tokenizer.chat_template markers, tokenizer.c). The
 * three known Gemma 4 templates: llama.cpp's gemma-4 vocab file LEGACY | PARAMS_OLD; the
 * 31B-it "interleaved" one LEGACY | PARAMS_OLD | REASON_V1 | JOIN_CALLS; the 31B-it one
 * REASON_V2 (it walks OpenAI's role "tool" messages itself). */
enum {
    CHAT_T_LEGACY     = 1,  /* tool results go in the assistant turn's tool_responses: llama.cpp's
                             * conversion of role "tool" messages for the older templates */
    CHAT_T_PARAMS_OLD = 2,  /* the older format_parameters (",properties:{", ",items:{") */
    CHAT_T_REASON_V1  = 4,  /* reasoning_content of a tool-calling turn after the last user turn:
                             * "<|channel>thought\n" R "<channel|>" */
    CHAT_T_REASON_V2  = 8,  /* the same with "\n<channel|>" */
    CHAT_T_JOIN_CALLS = 16  /* tool calls right after a tool response continue that model turn */
};

typedef struct chat_variant { /* read from tokenizer.chat_template markers (tokenizer.c) */
    int      think_nl;      /* "<|think|>\n" instead of "<|think|>" */
    int      empty_thought; /* thinking off: the generation prompt ends "<|channel>thought\n<channel|>" */
    int      merge_model;   /* an assistant message after an assistant message continues its turn */
    unsigned tools;         /* CHAT_T_* */
} chat_variant;

/* Called once per piece of output in order. marker = 1 for text the renderer wrote (turn
 * markers, BOS, roles, the special tokens of tool syntax): tokenize it with special parsing;
 * marker = 0 for message content and for the plain syntax text around it: tokenize it
 * without (reliability.md #60). Returns nonzero to stop. */
typedef int (*chat_emit_fn)(void *ud, const char *s, size_t n, int marker);

/* What one rendering renders. turns may carry OpenAI's tool fields (g4_chat_turn). */
typedef struct chat_req {
    const g4_chat_turn *turns;
    size_t      n;
    const char *bos;         /* BOS text, NULL = none */
    int         add_gen, thinking;
    int         cont;        /* continue a conversation already in the context: no system turn,
                              * every message a plain turn (thinking only affects the gen prompt) */
    const char *tools;       /* JSON text of OpenAI's tools array, NULL = none */
    size_t      tools_len;
} chat_req;

/* Validates the request (known roles, content pointers, the JSON of tools and tool calls)
 * and emits the rendering. G4_ERR_ARG names the message and field; G4_ERR_NOMEM; and
 * G4_ERR_ABORTED if emit stopped. */
G4_INTERNAL g4_status chat_render_req(const chat_variant *cv, const chat_req *rq, chat_emit_fn emit, void *ud,
                                      char *err, size_t errlen);
/* The same for plain messages (g4_chat_msg). */
G4_INTERNAL g4_status chat_render(const chat_variant *cv, const g4_chat_msg *msgs, size_t n_msgs, const char *bos,
                                  int add_gen, int thinking, int cont, chat_emit_fn emit, void *ud, char *err,
                                  size_t errlen);
/* Renders and tokenizes (markers with special parsing, content without, adjacent content
 * pieces as one text, as g4_chat_tokenize) into out[cap]; *n_out = ids produced or needed
 * (G4_ERR_BUFFER). */
G4_INTERNAL g4_status chat_tokenize(const g4_model *m, const g4_chat_msg *msgs, size_t n_msgs, int add_bos,
                                    int add_gen, int thinking, int cont, int32_t *out, size_t cap, size_t *n_out,
                                    char *err, size_t errlen);
G4_INTERNAL void      chat_variant_of(const g4_model *m, chat_variant *cv);

/* ==== chat_prep.c: a request, validated, as the turns the renderer walks ==== */

enum { CHAT_R_SYSTEM, CHAT_R_USER, CHAT_R_MODEL, CHAT_R_TOOL };

typedef struct chat_call {      /* one entry of an assistant turn's tool_calls */
    const char  *name;
    size_t       name_len;
    const g4_jv *args;          /* arguments as JSON (the object, or what the string held; as
                                 * llama.cpp parses them), NULL = none */
    const char  *id;            /* NULL = none */
    size_t       id_len;
} chat_call;

typedef struct chat_resp {      /* one tool response of a converted turn (CHAT_T_LEGACY) */
    const char  *name;
    size_t       name_len;
    const g4_jv *val;           /* the result parsed as JSON, or NULL: then str */
    const char  *str;
    size_t       str_len;
} chat_resp;

typedef struct chat_turn {
    int          kind;          /* CHAT_R_* */
    const char  *role;          /* as written in "<|turn>ROLE\n": system, user, model, tool */
    int          assistant;     /* given as "assistant" (the templates compare with that word) */
    const char  *content;       /* never NULL */
    size_t       content_len;
    const char  *reasoning;     /* NULL = none */
    size_t       reasoning_len;
    chat_call   *calls;         /* [n_calls] */
    size_t       n_calls;
    chat_resp   *resp;          /* [n_resp] tool responses (CHAT_T_LEGACY conversion) */
    size_t       n_resp;
    const char  *call_id;       /* tool turns: NULL = none */
    size_t       call_id_len;
    const char  *name;          /* tool turns: NULL = none */
    size_t       name_len;
} chat_turn;

typedef struct chat_prep {
    chat_turn   *t;             /* [n] */
    size_t       n;
    const g4_jv *tools;         /* the tools array (NULL or empty: none) */
    void       **own;           /* [n_own] allocations and parsed documents to free */
    size_t       n_own, cap_own;
} chat_prep;

/* Validates rq and fills p (with CHAT_T_LEGACY in flags, llama.cpp's conversion of "tool"
 * turns into the tool responses of the assistant turn they answer). chat_prep_free always. */
G4_INTERNAL g4_status chat_prepare(chat_prep *p, const chat_req *rq, unsigned flags, char *err, size_t errlen);
G4_INTERNAL void      chat_prep_free(chat_prep *p);

/* ==== chat_tools.c: the templates' tool syntax ==== */

typedef struct chat_out {
    chat_emit_fn emit;
    void        *ud;
    int          stop;     /* emit asked to stop, or st was set */
    g4_status    st;       /* G4_ERR_NOMEM from a helper */
    int          turn_end; /* the last piece emitted was "<turn|>\n" */
} chat_out;

G4_INTERNAL void chat_put(chat_out *o, const char *s, size_t n, int marker);
#define CHAT_SP(o, lit) chat_put(o, lit, sizeof(lit) - 1, 1) /* a special token (or renderer text) */
#define CHAT_TX(o, lit) chat_put(o, lit, sizeof(lit) - 1, 0) /* plain syntax text next to content */

/* "{{ v }}" of a JSON value as @huggingface/jinja prints it: strings as they are, numbers as
 * JavaScript's String(n), true/false, nothing for null or absent, containers as JSON. */
G4_INTERNAL void   chat_scalar(chat_out *o, const g4_jv *v);
/* the templates' format_argument(v, escape_keys) */
G4_INTERNAL void   chat_argument(chat_out *o, const g4_jv *v, int escape_keys);
/* format_function_declaration(tool), without the <|tool> <tool|> around it */
G4_INTERNAL void   chat_declaration(chat_out *o, const g4_jv *tool, unsigned flags);
/* "<|tool_call>call:NAME{...}<tool_call|>": args an object (keys sorted, format_argument
 * without escaped keys), a string (written as it is), or anything else (nothing) */
G4_INTERNAL void   chat_tool_call(chat_out *o, const char *name, size_t name_len, const g4_jv *args);
/* "<|tool_response>response:NAME{...}<tool_response|>": val an object (its members) or any
 * other JSON value; or, with val NULL, the string str ({value:<|"|>str<|"|>}) */
G4_INTERNAL void   chat_tool_response(chat_out *o, const char *name, size_t name_len, const g4_jv *val, const char *str,
                                      size_t str_len);
/* JavaScript's Number.prototype.toString of a finite x into buf[32]; returns the length */
G4_INTERNAL size_t chat_js_number(double x, char *buf);
/* JavaScript truthiness of a JSON value (absent and null false, "" 0 [] {} false) */
G4_INTERNAL int    chat_truthy(const g4_jv *v);

#endif
