#include "numerics/pool.h"

#include <unistd.h>

int sd_default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
