/* SIGBUS from a model file that shrank under its mapping (see sigbus.h). */
#define _POSIX_C_SOURCE 200809L /* sigaction */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli/sigbus.h"

static void on_sigbus(int sig) {
    static const char msg[] = "specdec: model file changed or truncated while in use (SIGBUS)\n";
    (void)sig;
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) { /* nothing more we can do */ }
    _exit(1);
}

void cli_catch_sigbus(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigbus;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}
