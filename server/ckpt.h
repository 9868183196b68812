/* ckpt.h - a slot's context checkpoint (server/ckpt.c): the session's state saved in a file
 * when a long prompt has been evaluated, so that a conversation resent with more turns can
 * restart from it even when the sliding-window rings no longer hold what a cut back to the
 * shared prefix needs (g4_session_truncate returns less than asked: the answer generated
 * since overwrote the window). llama-server keeps such checkpoints in memory for the same
 * reason (its --ctx-checkpoints); here they go through g4_session_save / g4_session_load,
 * the file carrying the ids of the saved positions too (checked against the copy kept here).
 */
#ifndef G4_SERVER_CKPT_H
#define G4_SERVER_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "g4.h"

typedef struct ckpt {
    char     path[512];  /* "" = checkpoints off */
    int32_t *toks;       /* [n_ctx] the ids of the saved positions */
    int32_t  n;          /* saved positions, 0 = none */
    int32_t  cap;        /* n_ctx: room in toks */
} ckpt;

/* A private directory for the server's checkpoint files under $TMPDIR (or /tmp): 0, or -1
 * with err. ckpt_dir_remove removes it and the slot files in it. */
int  ckpt_dir_create(char *dir, size_t cap, char *err, size_t errlen);
void ckpt_dir_remove(const char *dir);

/* dir NULL or "": checkpoints off. 0, or -1 when out of memory. */
int  ckpt_init(ckpt *c, const char *dir, int slot, int32_t n_ctx);
void ckpt_free(ckpt *c); /* removes the file */
/* Saves s (n_past positions, ids toks[0..n_past)); 0, or -1 (the checkpoint is then empty). */
int  ckpt_save(ckpt *c, g4_session *s, const int32_t *toks);
/* When the checkpoint shares more than have ids with prompt[0..n_prompt) (at most keep_max
 * of them) and ends at most slack positions after that shared prefix (a cut that far back
 * always keeps the sliding window: the session's n_ubatch), loads it into s and cuts it back
 * to the shared prefix: returns the position s is at (ids in toks_out[0..pos)), or -1 when it
 * could not help (s unchanged). */
int32_t ckpt_restore(ckpt *c, g4_session *s, const int32_t *prompt, size_t n_prompt, int32_t have, int32_t keep_max,
                     int32_t slack, int32_t *toks_out);

#endif
