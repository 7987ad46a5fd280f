/* The process's configuration, loaded once by prophet_init() (init.c), and the names it is
 * reported by. Lowest layer: every preload file may read it; it calls nothing in preload/. */
#include "config/process_config.h"
#include "prophet/sched.h"

prophet_config_t prophet_cfg = {.debug = PROPHET_LOG_WARN};

prophet_policy_t prophet_cfg_policy(void)
{
    return prophet_cfg.policy_set ? prophet_cfg.policy : prophet_policy_default();
}
