/* The front end's answer to SIGBUS. Models are read through a read-only
 * mmap (format/gguf_read.c); when another process truncates or rewrites the
 * file while it is mapped, the next touch of a page past the new end raises
 * SIGBUS, which would otherwise kill us with the bare "Bus error" of the shell.
 * The library cannot handle it (a signal disposition is process-wide), so the
 * CLI does, before any model is opened. */
#ifndef SD_CLI_SIGBUS_H
#define SD_CLI_SIGBUS_H

/* Installs a handler that writes the one line
 *   specdec: model file changed or truncated while in use (SIGBUS)
 * to stderr with write(2) and ends the process with _exit(1): async-signal-
 * safe only (no stdio, no exit handlers; buffered stdout is lost). */
void cli_catch_sigbus(void);

#endif
