/* The CPU cores this process may use. */
#ifndef FSDP_CORES_H
#define FSDP_CORES_H

/* The cores this process may run on (its CPU affinity: taskset, cgroups, Slurm's binding),
 * at least 1. */
int available_cores(void);

#endif
