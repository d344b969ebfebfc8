#include "decode/drafter.h"

void sd_drafter_free(sd_drafter *d) {
    if (!d) return;
    if (d->free) d->free(d->self);
    *d = (sd_drafter){0};
}
