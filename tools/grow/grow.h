/* sd-genmodel --grow: a small trained qwen3 GGUF placed inside a realistic
 * shape (see grow.c for the construction). */
#ifndef SD_TOOLS_GROW_H
#define SD_TOOLS_GROW_H

/* Runs `sd-genmodel --grow SMALL.gguf --shape NAME -o OUT.gguf [--type T]`
 * (argv as given to main). Returns the process exit code: 0 written,
 * 1 the model cannot be grown or written (one-line message on stderr),
 * 2 usage error. */
int grow_main(int argc, char **argv);

#endif
