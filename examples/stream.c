/* Streaming generation through the public API, the smallest complete use:
 *
 *     cc stream.c -o stream $(pkg-config --cflags --libs specdec)
 *     ./stream MODEL.gguf ["PROMPT" [N_PREDICT [DRAFT.gguf]]]
 *
 * Loads the model (and a draft model if given), generates greedily with
 * speculative decoding ("auto": n-gram lookup, plus the draft model), prints
 * the text as it arrives, then one line of statistics on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <specdec.h>

static bool on_piece(const specdec_piece *piece, void *user) {
    (void)user;
    fwrite(piece->text, 1, piece->len, stdout);
    fflush(stdout);
    return true; /* false would stop the generation here */
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [PROMPT [N_PREDICT [DRAFT.gguf]]]\n", argv[0]);
        return 2;
    }
    const char *prompt = argc > 2 ? argv[2] : "Once upon a time";
    specdec_error err = {0};
    specdec_model *model = NULL, *draft = NULL;
    specdec_context *ctx = NULL;
    specdec_token *tokens = NULL;
    size_t n_tokens = 0;
    int rc = 1;

    if (specdec_model_load(argv[1], NULL, &model, &err) != SPECDEC_OK) goto done;
    if (argc > 4 && specdec_model_load(argv[4], NULL, &draft, &err) != SPECDEC_OK) goto done;

    specdec_context_params cp = specdec_context_default_params();
    cp.draft = draft;
    if (specdec_context_init(model, &cp, &ctx, &err) != SPECDEC_OK) goto done;

    if (specdec_tokenize(model, prompt, strlen(prompt), true, false, &tokens, &n_tokens, &err) != SPECDEC_OK)
        goto done;

    specdec_generate_params gp = specdec_generate_default_params();
    gp.n_predict = argc > 3 ? atoi(argv[3]) : 64;
    gp.spec = SPECDEC_SPEC_AUTO;
    specdec_stats st;
    if (specdec_generate(ctx, tokens, n_tokens, &gp, on_piece, NULL, &st, &err) != SPECDEC_OK) goto done;

    printf("\n");
    fprintf(stderr, "%s: %d prompt + %d generated tokens, drafter %s, %lld/%lld drafts accepted in %lld rounds, "
                    "stop: %s\n",
            specdec_model_name(model), st.n_prompt, st.n_gen, st.drafter, (long long)st.n_accepted,
            (long long)st.n_drafted, (long long)st.n_rounds, specdec_stop_reason_name(st.stop_reason));
    rc = 0;
done:
    if (rc) fprintf(stderr, "error: %s\n", err.message);
    specdec_free(tokens);
    specdec_context_free(ctx);
    specdec_model_free(draft);
    specdec_model_free(model);
    return rc;
}
