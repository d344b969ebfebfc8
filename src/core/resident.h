/* How much of a range of this process's memory is resident (backed by a page
 * in its page tables), for the "weights resident" figures. */
#ifndef SD_CORE_RESIDENT_H
#define SD_CORE_RESIDENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of the pages overlapping [addr, addr + len) that are present in this
 * process's page tables (Linux /proc/self/pagemap, bit 63 "page present"), in
 * whole pages. Why not mincore(2): for a file mapping it reports whether the
 * page is in the kernel's page cache (for files the caller owns or could
 * write), which stays true after MADV_DONTNEED dropped it from this process,
 * so it cannot tell what the process holds. Returns false (and *out = 0) when
 * pagemap cannot be read (not Linux, /proc not mounted). No allocation. */
bool sd_resident_bytes(const void *addr, size_t len, uint64_t *out);

/* Memory this process could still take without swapping, in bytes: the
 * kernel's estimate MemAvailable (/proc/meminfo, Linux >= 3.14), or less when
 * the process's cgroup has a limit (memory.max - memory.current for cgroup
 * v2, memory.limit_in_bytes - memory.usage_in_bytes for the v1 memory
 * controller, of the group named in /proc/self/cgroup). False (and *out = 0)
 * when neither can be read. */
bool sd_mem_available(uint64_t *out);

/* The system page size in bytes (sysconf), 4096 if unknown. */
size_t sd_page_size(void);

#endif
