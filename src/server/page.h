/* The chat page (chat_page.html), embedded in the binary at build time by
 * CMakeLists.txt: NUL-terminated, sd_chat_page_len bytes without the NUL. */
#ifndef SD_SERVER_PAGE_H
#define SD_SERVER_PAGE_H

#include <stddef.h>

extern const char sd_chat_page[];
extern const size_t sd_chat_page_len;

#endif
