/* Resident bytes of a memory range from /proc/self/pagemap (see resident.h).
 * pagemap holds one u64 per virtual page of the process, at offset
 * (address / page size) * 8; bit 63 is set when the page is present in RAM
 * (Linux Documentation/admin-guide/mm/pagemap.rst). An unprivileged reader
 * gets the flags with the frame numbers zeroed, which is all we need. */
#define _POSIX_C_SOURCE 200809L
#include "core/resident.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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

/* The first unsigned number after key in the file at path (0 when absent). */
static bool read_u64_after(const char *path, const char *key, uint64_t *out) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[512];
    bool ok = false;
    const size_t kl = strlen(key);
    while (!ok && fgets(line, sizeof line, f)) {
        unsigned long long v;
        if (!strncmp(line, key, kl) && sscanf(line + kl, "%llu", &v) == 1) *out = v, ok = true;
    }
    fclose(f);
    return ok;
}

/* The path of this process's group from its /proc/self/cgroup line holding
 * tag ("0::" for cgroup v2, ":memory:" for the v1 memory controller), into group[cap]. */
static bool cgroup_path(const char *tag, char *group, size_t cap) {
    char line[512];
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return false;
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        char *c = strstr(line, tag);
        if (c && (tag[0] == ':' || c == line)) { /* "0::" starts its line; ":memory:" follows the id */
            c += strlen(tag);
            c[strcspn(c, "\n")] = '\0';
            snprintf(group, cap, "%s", c);
            found = true;
        }
    }
    fclose(f);
    return found;
}

/* limit - usage of the files lim and use under dir (no limit: false). */
static bool room_of(const char *dir, const char *lim, const char *use, uint64_t *out) {
    char path[1024];
    uint64_t max = 0, cur = 0;
    snprintf(path, sizeof path, "%s/%s", dir, lim);
    if (!read_u64_after(path, "", &max) || max >= (1ull << 62)) return false; /* "max" or v1's huge value */
    snprintf(path, sizeof path, "%s/%s", dir, use);
    if (!read_u64_after(path, "", &cur)) return false;
    *out = max > cur ? max - cur : 0;
    return true;
}

/* The cgroup room left: memory.max - memory.current (v2), or
 * memory.limit_in_bytes - memory.usage_in_bytes of the v1 memory controller. */
static bool cgroup_room(uint64_t *out) {
    char group[512], dir[700];
    if (cgroup_path(":memory:", group, sizeof group)) {
        snprintf(dir, sizeof dir, "/sys/fs/cgroup/memory%s", group);
        if (room_of(dir, "memory.limit_in_bytes", "memory.usage_in_bytes", out)) return true;
    }
    if (cgroup_path("0::", group, sizeof group)) {
        snprintf(dir, sizeof dir, "/sys/fs/cgroup%s", group);
        if (room_of(dir, "memory.max", "memory.current", out)) return true;
    }
    return false;
}

bool sd_mem_available(uint64_t *out) {
    uint64_t kib = 0, room = 0;
    const bool mem = read_u64_after("/proc/meminfo", "MemAvailable:", &kib);
    const bool cg = cgroup_room(&room);
    *out = mem ? kib * 1024 : 0;
    if (cg && (!mem || room < *out)) *out = room;
    return mem || cg;
}
