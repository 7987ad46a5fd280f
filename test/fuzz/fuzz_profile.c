/* Fuzz target: the prophet-profile/1 loader. Invariants: never crashes; on success the profile is
 * internally consistent (call count within bounds, readiness offsets finite and non-decreasing in
 * backward order is NOT required by the format, but every value must be finite). */
#include "prophet/sched.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static prophet_profile_t p; /* large: keep it off the stack */
    char err[256];

    if (prophet_profile_from_json((const char *)data, size, &p, err, sizeof(err)) != 0)
        return 0;
    if (p.n_calls == 0 || p.n_calls > PROPHET_MAX_CALLS || p.n_steps > p.n_calls)
        abort();
    for (uint32_t i = 0; i < p.n_calls; i++)
        if (!isfinite(p.ready_us[i]))
            abort();
    return 0;
}
