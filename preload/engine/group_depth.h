/* Per-thread depth of the user's ncclGroupStart/End (group_depth.c): NCCL's depth is per thread. */
#ifndef PROPHET_GROUP_DEPTH_H
#define PROPHET_GROUP_DEPTH_H

int prophet_group_depth(void);
void prophet_group_enter(void);
void prophet_group_leave(void);

#endif
