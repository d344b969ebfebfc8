/* Resident bytes of a memory range from /proc/self/pagemap (see resident.h).
 * pagemap holds one u64 per virtual page of the process, at offset
 * (address / page size) * 8; bit 63 is set when the page is present in RAM
 * (Linux Documentation/admin-guide/mm/pagemap.rst). An unprivileged reader
 * gets the flags with the frame numbers zeroed, which is all we need. */
#define _POSIX_C_SOURCE 200809L
#include "core/resident.h"

#include <fcntl.h>
#include <unistd.h>

size_t sd_page_size(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

bool sd_resident_bytes(const void *addr, size_t len, uint64_t *out) {
    *out = 0;
    if (len == 0) return true;
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const size_t page = sd_page_size();
    uint64_t first = (uint64_t)(uintptr_t)addr / page;
    uint64_t last = ((uint64_t)(uintptr_t)addr + len - 1) / page;
    uint64_t buf[512], present = 0;
    bool ok = true;
    for (uint64_t p = first; p <= last && ok;) {
        uint64_t n = last - p + 1 < 512 ? last - p + 1 : 512;
        ssize_t got = pread(fd, buf, (size_t)n * 8, (off_t)(p * 8));
        if (got <= 0 || got % 8) {
            ok = false;
            break;
        }
        for (ssize_t i = 0; i < got / 8; i++) present += buf[i] >> 63;
        p += (uint64_t)got / 8;
    }
    close(fd);
    if (ok) *out = present * page;
    return ok;
}
