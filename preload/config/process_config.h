/* The process's configuration (process_config.c): prophet_cfg, loaded once by prophet_init()
 * (init.c) from the PROPHET_* knobs (include/prophet/config.h), read everywhere, written nowhere
 * else. */
#ifndef PROPHET_PROCESS_CONFIG_H
#define PROPHET_PROCESS_CONFIG_H

#include "prophet/config.h"

extern prophet_config_t prophet_cfg;

/* The policy in effect: PROPHET_POLICY when given, else the built-in default. */
prophet_policy_t prophet_cfg_policy(void);

#endif
