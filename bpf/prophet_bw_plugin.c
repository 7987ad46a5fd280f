/* What libprophet_bw.so exports: the reader of prophet_bw.c as version 1 of the plugin interface
 * (include/prophet/bw_plugin.h). Its only dynamic symbol (prophet_bw.map). */
#include "prophet/bw_plugin.h"

const prophet_bw_plugin_v1_t prophet_bw_plugin_v1 = {
    .name = "ebpf",
    .open = prophet_bw_open,
    .source = prophet_bw_source,
    .source_name = prophet_bw_source_name,
    .read = prophet_bw_read,
    .close = prophet_bw_close,
};
