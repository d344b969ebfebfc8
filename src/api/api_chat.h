/* What the chat parts of the API share (api_chat.c, api_tools.c). */
#ifndef SD_API_API_CHAT_H
#define SD_API_API_CHAT_H

#include "api/api_internal.h"
#include "chat/chat.h"

/* The template (specdec_chat_template_resolve's choice) and the rendering
 * options for (model, params); params NULL = defaults. Errors: those of
 * specdec_chat_template_resolve. */
specdec_status sd_api_chat_setup(const specdec_model *model, const specdec_chat_params *params, sd_chat_template *t,
                                 sd_chat_opts *opts, specdec_error *err);

#endif
